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
