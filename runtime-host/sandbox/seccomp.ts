/**
 * The seccomp filter bwrap applies to a replica (`--seccomp FD`): no new user namespaces.
 *
 * Why: root of a user namespace of its own, an app may mount (a tmpfs the kernel sizes at half
 * the host's memory, past the sandbox's bounded /tmp) and reach kernel code that an
 * unprivileged user cannot. bwrap's `--disable-userns` needs `--unshare-user`, which replicas
 * with a host user of their own run without; a filter holds in both modes.
 *
 * What it answers, everything else being allowed:
 * - unshare(2) and clone(2) with CLONE_NEWUSER in their flags (the first argument): EPERM;
 * - clone3(2): ENOSYS. Its flags are in memory, which a filter cannot read; glibc and Node
 *   then fall back to clone(2), as under Docker's and Flatpak's filters;
 * - any call of an ABI other than the host's own (i386 through `int 0x80` and x32 on x86_64,
 *   32-bit ARM on arm64): ENOSYS. Their calls are numbered differently and would slip past the
 *   checks above. An answer rather than a kill: a program that probes gets what a kernel
 *   built without that ABI says. So 32-bit programs do not run in the sandbox.
 *
 * No libseccomp and no native modules on the host: the program is built here, as the kernel
 * reads it (classic BPF, an array of struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}).
 */
import { mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { endianness, tmpdir } from "node:os";
import { join } from "node:path";

const SECCOMP_RET_ALLOW = 0x7fff_0000;
const SECCOMP_RET_ERRNO = 0x0005_0000;
const EPERM = 1;
const ENOSYS = 38;
const CLONE_NEWUSER = 0x1000_0000;
/** x32's calls carry this bit; no other ABI numbers its calls this high. */
const X32_SYSCALL_BIT = 0x4000_0000;

/** The opcodes used: load a word of seccomp_data, compare it, return an action. */
const LOAD_WORD = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JUMP_IF_EQUAL = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JUMP_IF_AT_LEAST = 0x35; // BPF_JMP | BPF_JGE | BPF_K (unsigned)
const JUMP_IF_ANY_BIT = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RETURN = 0x06; // BPF_RET | BPF_K

/** Offsets in struct seccomp_data. */
const NR = 0;
const ARCH = 4;
/**
 * The low 32 bits of args[0] (a u64 at 16) on a little-endian machine: CLONE_NEWUSER is bit 28,
 * so the high half never holds it (the kernel reads both calls' flags as unsigned long).
 */
const FLAGS_LOW = 16;

interface Abi {
  /** AUDIT_ARCH_* of the host's own ABI. */
  arch: number;
  unshare: number;
  clone: number;
  clone3: number;
}

const ABIS: Partial<Record<NodeJS.Architecture, Abi>> = {
  x64: { arch: 0xc000_003e, unshare: 272, clone: 56, clone3: 435 },
  arm64: { arch: 0xc000_00b7, unshare: 97, clone: 220, clone3: 435 },
};

type Instruction = [code: number, jt: number, jf: number, k: number];

/**
 * The program for `arch` (Node's name), or undefined where this module does not know the
 * machine's numbers (the caller says the filter is not applied).
 */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  const abi = ABIS[arch as NodeJS.Architecture];
  if (!abi || endianness() !== "LE") return undefined;
  // Jumps count the instructions to skip: jt when the test holds, jf when not.
  const program: Instruction[] = [
    /* 0 */ [LOAD_WORD, 0, 0, ARCH],
    /* 1 */ [JUMP_IF_EQUAL, 0, 10, abi.arch], // another ABI: to 12
    /* 2 */ [LOAD_WORD, 0, 0, NR],
    /* 3 */ [JUMP_IF_AT_LEAST, 8, 0, X32_SYSCALL_BIT], // x32: to 12
    /* 4 */ [JUMP_IF_EQUAL, 7, 0, abi.clone3], // to 12
    /* 5 */ [JUMP_IF_EQUAL, 2, 0, abi.unshare], // to 8
    /* 6 */ [JUMP_IF_EQUAL, 1, 0, abi.clone], // to 8
    /* 7 */ [RETURN, 0, 0, SECCOMP_RET_ALLOW],
    /* 8 */ [LOAD_WORD, 0, 0, FLAGS_LOW],
    /* 9 */ [JUMP_IF_ANY_BIT, 0, 1, CLONE_NEWUSER], // no new user namespace: to 11
    /* 10 */ [RETURN, 0, 0, SECCOMP_RET_ERRNO | EPERM],
    /* 11 */ [RETURN, 0, 0, SECCOMP_RET_ALLOW],
    /* 12 */ [RETURN, 0, 0, SECCOMP_RET_ERRNO | ENOSYS],
  ];
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k, i * 8 + 4);
  });
  return bytes;
}

/**
 * `program` on a file descriptor of its own, for one bwrap to read (it reads to the end, so
 * every bwrap needs its own). The file is gone once open: nothing is left behind.
 */
export function openProgram(program: Buffer): number {
  const dir = mkdtempSync(join(tmpdir(), "runlet-seccomp-"));
  try {
    const path = join(dir, "filter.bpf");
    writeFileSync(path, program, { mode: 0o600 });
    return openSync(path, "r");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
