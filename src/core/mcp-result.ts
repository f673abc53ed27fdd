// An MCP tool result as the model reads it: text blocks as they are, a placeholder for each block
// the model cannot take as text (images, audio, binary resources), cut at a size cap. No I/O.
import { isRecord } from "./is-record.ts";

/** The text of a result's content blocks, at most `maxChars` characters (said so when cut). */
export function toMcpResultText(content: readonly unknown[], structuredContent: unknown, maxChars: number): { text: string; truncated: boolean } {
  const parts = content.map(toBlockText);
  if (parts.length === 0 && structuredContent !== undefined) parts.push(JSON.stringify(structuredContent));
  const whole = parts.length === 0 ? "(the tool answered no content)" : parts.join("\n");
  if (whole.length <= maxChars) return { text: whole, truncated: false };
  return {
    text: `${whole.slice(0, maxChars)}\n\n[truncated: the tool's answer is ${whole.length} characters; only the first ${maxChars} are shown]`,
    truncated: true,
  };
}

function toBlockText(block: unknown): string {
  if (!isRecord(block)) return "[a content block the client could not read]";
  const mime = typeof block.mimeType === "string" ? block.mimeType : "unknown type";
  switch (block.type) {
    case "text":
      return typeof block.text === "string" ? block.text : "";
    case "image":
    case "audio":
      return `[${block.type} (${mime}, ${base64Bytes(block.data)} bytes) not shown: only text reaches the model]`;
    case "resource_link":
      return `[resource link: ${String(block.uri)}${typeof block.name === "string" ? ` (${block.name})` : ""}]`;
    case "resource": {
      const resource = isRecord(block.resource) ? block.resource : {};
      if (typeof resource.text === "string") return resource.text;
      return `[resource ${String(resource.uri)} (${typeof resource.mimeType === "string" ? resource.mimeType : "binary"}) not shown: only text reaches the model]`;
    }
    default:
      return `[a ${String(block.type)} content block not shown]`;
  }
}

function base64Bytes(data: unknown): number {
  if (typeof data !== "string") return 0;
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}
