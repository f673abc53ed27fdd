import { describe, expect, it } from "vitest";
import { toMcpResultText } from "./mcp-result.ts";

describe("toMcpResultText", () => {
  it.each([
    [
      [
        { type: "text", text: "a" },
        { type: "text", text: "b" },
      ],
      undefined,
      "a\nb",
    ],
    [[{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }], undefined, "[image (image/png, 8 bytes) not shown: only text reaches the model]"],
    [[{ type: "audio", data: "AAAA", mimeType: "audio/wav" }], undefined, "[audio (audio/wav, 3 bytes) not shown: only text reaches the model]"],
    [[{ type: "resource_link", uri: "file:///a.ts", name: "a.ts" }], undefined, "[resource link: file:///a.ts (a.ts)]"],
    [[{ type: "resource", resource: { uri: "file:///a.ts", text: "body" } }], undefined, "body"],
    [
      [{ type: "resource", resource: { uri: "file:///a.bin", blob: "AA==", mimeType: "application/zip" } }],
      undefined,
      "[resource file:///a.bin (application/zip) not shown: only text reaches the model]",
    ],
    [[{ type: "video" }], undefined, "[a video content block not shown]"],
    [["junk"], undefined, "[a content block the client could not read]"],
    [[], { n: 1 }, '{"n":1}'],
    [[], undefined, "(the tool answered no content)"],
  ])("%j → %s", (content, structured, text) => {
    expect(toMcpResultText(content, structured, 1_000)).toEqual({ text, truncated: false });
  });

  it("cuts a long answer and says so", () => {
    const r = toMcpResultText([{ type: "text", text: "x".repeat(50) }], undefined, 10);
    expect(r.truncated).toBe(true);
    expect(r.text).toBe(`${"x".repeat(10)}\n\n[truncated: the tool's answer is 50 characters; only the first 10 are shown]`);
  });
});
