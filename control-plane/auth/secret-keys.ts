/**
 * Keys the control plane derives from one 32-byte master secret (HKDF-SHA256, WebCrypto, so the
 * same code runs under Node and on Workers): an HMAC key for audit-log page tokens and an AES-GCM
 * key for project secrets at rest. The master secret never leaves the control plane.
 */
export interface DerivedKeys {
  pageTokens: CryptoKey;
  secrets: CryptoKey;
}

const encoder = new TextEncoder();

async function derive(
  master: CryptoKey,
  info: string,
  algorithm: { name: "HMAC"; hash: "SHA-256" } | { name: "AES-GCM"; length: 256 },
  usages: ("sign" | "verify" | "encrypt" | "decrypt")[],
): Promise<CryptoKey> {
  const bits = await crypto.subtle.deriveBits(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(info) },
    master,
    256,
  );
  return crypto.subtle.importKey("raw", bits, algorithm, false, usages);
}

export async function deriveKeys(masterSecret: Uint8Array): Promise<DerivedKeys> {
  if (masterSecret.byteLength < 32) throw new Error("the master secret must be at least 32 bytes");
  const master = await crypto.subtle.importKey("raw", masterSecret, "HKDF", false, ["deriveBits"]);
  return {
    pageTokens: await derive(
      master,
      "runlet audit-log page tokens v1",
      { name: "HMAC", hash: "SHA-256" },
      ["sign", "verify"],
    ),
    secrets: await derive(master, "runlet secrets at rest v1", { name: "AES-GCM", length: 256 }, [
      "encrypt",
      "decrypt",
    ]),
  };
}
