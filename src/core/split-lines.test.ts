import { describe, expect, it } from "vitest";
import { splitLines } from "./split-lines.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function* chunksOf(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = encoder.encode(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function linesOf(text: string, size: number): Promise<[number, number, string][]> {
  const out: [number, number, string][] = [];
  for await (const l of splitLines(chunksOf(text, size))) out.push([l.line, l.offset, decoder.decode(l.bytes)]);
  return out;
}

describe("splitLines", () => {
  const text = '{"a":1}\n{"b":"é"}\r\n\nlast';
  const expected: [number, number, string][] = [
    [1, 0, '{"a":1}'],
    [2, 8, '{"b":"é"}'],
    [3, 20, ""],
    [4, 21, "last"],
  ];
  it.each([1, 2, 3, 7, 64])("gives each line its 1-based number and byte offset, in chunks of %i bytes", async (size) => {
    expect(await linesOf(text, size)).toEqual(expected);
  });

  it.each([
    ["", []],
    ["\n", [[1, 0, ""]]],
    ["x\n", [[1, 0, "x"]]],
  ] as const)("%j", async (input, lines) => {
    expect(await linesOf(input, 4)).toEqual(lines);
  });

  it("offsets and lengths read each line back from the bytes (multi-byte characters split across chunks)", async () => {
    const body = ["ünï", "code ✓", "{}"].join("\n");
    const bytes = encoder.encode(body);
    for await (const l of splitLines(chunksOf(body, 1))) {
      expect(decoder.decode(bytes.subarray(l.offset, l.offset + l.bytes.length))).toBe(decoder.decode(l.bytes));
    }
  });
});
