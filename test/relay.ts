/**
 * A TCP relay on loopback that stands for a bad link to a runtime host (this kernel has no
 * netem): it forwards every connection to `target`, each chunk `delayMs` late, and can cut
 * every open connection at once, as a link that breaks does.
 */
import net from "node:net";

export interface Relay {
  url: string;
  /** Connections it took so far. */
  accepted(): number;
  /** Destroys every open connection, both sides. */
  cut(): void;
  close(): Promise<void>;
}

export async function startRelay(targetPort: number, delayMs = 0): Promise<Relay> {
  const open = new Set<net.Socket>();
  let accepted = 0;
  const pipe = (from: net.Socket, to: net.Socket) => {
    from.on("data", (chunk) => {
      if (delayMs === 0) to.write(chunk);
      else setTimeout(() => to.destroyed || to.write(chunk), delayMs);
    });
    from.on("end", () => setTimeout(() => to.end(), delayMs));
  };
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect(targetPort, "127.0.0.1");
    const done = () => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on("error", done).on("close", done);
    }
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    accepted: () => accepted,
    cut: () => {
      for (const socket of open) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
