import { DurableObject } from "cloudflare:workers";
export class KeyPool extends DurableObject {}
