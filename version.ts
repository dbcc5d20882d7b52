/** crab's version, from deno.json. */
import denoJson from "./deno.json" with { type: "json" };

export const VERSION: string = denoJson.version;
