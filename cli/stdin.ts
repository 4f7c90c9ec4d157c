import { StringDecoder } from "node:string_decoder";
import { CliError } from "./command.ts";

/**
 * All of standard input as UTF-8 text, for a value piped in (`secrets set NAME`, `run --data -`).
 * On a terminal it says first what to type, as nothing else would say the command is waiting.
 */
export async function readStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) console.error(`Type ${what}, then Ctrl-D:`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * `text` with the keys typed at a terminal in raw mode, and whether Ctrl-D ended it. Line ends
 * stay as they came (Enter is \r in raw mode): `lineEnds` makes them \n once it has ended.
 */
function typed(text: string, keys: string): { text: string; ended: boolean } {
  for (const key of keys) {
    if (key === "\u0004") return { text, ended: true }; // Ctrl-D
    if (key === "\u0003") throw new CliError("interrupted (Ctrl-C): nothing was stored");
    if (key === "\u007f" || key === "\b") text = [...text].slice(0, -1).join("");
    else text += key;
  }
  return { text, ended: false };
}

/** Enter's \r, and a pasted \r\n, as the \n a piped value has. */
const lineEnds = (text: string) => text.replace(/\r\n?/g, "\n");

/**
 * A secret: piped in, as readStdin reads it; typed at a terminal, not shown as it is typed (the
 * terminal's echo off), ended by Ctrl-D, Backspace taking back a character and Ctrl-C stopping.
 * It was echoed as typed, on the screen and in the terminal's scrollback, while the dashboard's
 * field masks it.
 */
export async function readSecret(what: string): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY || typeof input.setRawMode !== "function") return readStdin(what);
  // Raw before the prompt: keys typed as soon as it shows are read unechoed, and a Ctrl-C in
  // them is a key, not the terminal's SIGINT.
  input.setRawMode(true);
  console.error(`Type ${what} (it is not shown as you type), then Ctrl-D:`);
  let text = "";
  // A character of several bytes may come split over two reads (a paste of non-ASCII text).
  const decoder = new StringDecoder("utf8");
  let onData: ((chunk: Buffer) => void) | undefined;
  let onEnd: (() => void) | undefined;
  try {
    return await new Promise<string>((resolve, reject) => {
      onData = (chunk: Buffer) => {
        try {
          const next = typed(text, decoder.write(chunk));
          text = next.text;
          if (next.ended) resolve(lineEnds(text));
        } catch (err) {
          reject(err);
        }
      };
      input.on("data", onData);
      onEnd = () => resolve(lineEnds(text));
      input.once("end", onEnd);
      input.resume();
    });
  } finally {
    if (onData) input.off("data", onData);
    if (onEnd) input.off("end", onEnd);
    input.setRawMode(false);
    input.pause();
    process.stderr.write("\n");
  }
}
