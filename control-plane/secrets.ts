/**
 * Project secrets at rest: AES-256-GCM with the control plane's derived key, a random 12-byte
 * IV per write, and `{projectId}/{name}` as additional data, so a sealed value copied to another
 * row does not open. Stored as base64 of IV + ciphertext. WebCrypto only (Node and Workers).
 */
import { base64urlDecode, base64urlEncode } from "../common/jwt.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const aad = (projectId: string, name: string) => encoder.encode(`${projectId}/${name}`);

export async function sealSecret(
  key: CryptoKey,
  projectId: string,
  name: string,
  value: string,
): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: aad(projectId, name) },
      key,
      encoder.encode(value),
    ),
  );
  const out = new Uint8Array(iv.byteLength + sealed.byteLength);
  out.set(iv);
  out.set(sealed, iv.byteLength);
  return base64urlEncode(out);
}

export async function openSecret(
  key: CryptoKey,
  projectId: string,
  name: string,
  sealed: string,
): Promise<string> {
  const bytes = base64urlDecode(sealed);
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: bytes.slice(0, 12), additionalData: aad(projectId, name) },
    key,
    bytes.slice(12),
  );
  return decoder.decode(plain);
}
