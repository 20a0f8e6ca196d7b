import { isIPv4, isIPv6 } from 'node:net';

/** Expands an IPv6 address to its eight 16-bit groups (no zone id; IPv4 tail converted). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.split('%')[0]!.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -v4[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? missing !== 0 : missing < 0) return undefined;
  const groups = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right].map((g) =>
    Number.parseInt(g, 16),
  );
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * A client's address without the port a trusted proxy may write with it (`a.b.c.d:port`,
 * `[v6]:port`, `[v6]`): what a refresh token's client fingerprint and a CAPTCHA verifier get, so
 * that two connections of one client are one client.
 */
export function clientAddress(ip: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(ip);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(ip);
  return v4 ? v4[1]! : ip;
}

const dotted = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;

/** The IPv4 address an IPv6 address stands for: IPv4-mapped, 6to4 (2002::/16), Teredo (2001::/32). */
function embeddedIpv4(groups: number[]): string | undefined {
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return dotted(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return dotted(groups[1]!, groups[2]!);
  // Teredo: the client's public address, bit-inverted, in the last 32 bits.
  if (groups[0] === 0x2001 && groups[1] === 0) return dotted(~groups[6]! & 0xffff, ~groups[7]! & 0xffff);
  return undefined;
}

/** Every client whose address is no IP address (a proxy's odd format, `unknown`) counts as this one. */
export const UNRECOGNISED_NETWORK = 'unrecognised';

/**
 * The network a client address stands for in per-client limits: an IPv4 address itself (an
 * IPv6 address that embeds one, IPv4-mapped, 6to4 or Teredo, counts as it), an IPv6 address's /64
 * (one subscriber commonly holds a whole /64, so counting single IPv6 addresses would let one
 * client multiply its budget 2^64 times). A port a trusted proxy wrote with the address is
 * dropped. Anything that is still no IP address (non-canonical spellings such as `203.0.113.005`
 * included) counts as one network, UNRECOGNISED_NETWORK: used as it was, each spelling or port
 * would have been a network with fresh limits.
 */
export type ClientNetwork = string;

export function clientNetwork(raw: string): ClientNetwork {
  return clientNetworks(raw).network;
}

/**
 * The client's network (`clientNetwork`) and, for a plain IPv6 client, the wider network its /64
 * belongs to: its /56 (what an ISP commonly delegates to one subscriber, RFC 6177), for a second,
 * looser per-IP window. With the /64 alone, one subscriber holding a /56 or a /48 had 256 or 65,536
 * networks' worth of requests. No `site` for IPv4 and for IPv6 addresses that stand for an IPv4 one.
 */
export function clientNetworks(raw: string): { network: ClientNetwork; site?: string } {
  const ip = clientAddress(raw);
  if (isIPv4(ip)) return { network: ip };
  const groups = isIPv6(ip) ? ipv6Groups(ip) : undefined;
  if (!groups) return { network: UNRECOGNISED_NETWORK };
  const v4 = embeddedIpv4(groups);
  if (v4) return { network: v4 };
  return {
    network: `${prefix(groups, 4)}::/64`,
    site: `${prefix([...groups.slice(0, 3), groups[3]! & 0xff00], 4)}::/56`,
  };
}

const prefix = (groups: number[], count: number) =>
  groups
    .slice(0, count)
    .map((g) => g.toString(16))
    .join(':');

/**
 * The network a session is shown with (sessions listings, the console): a client network
 * (`clientNetwork`) widened to an IPv4 /24 or an IPv6 /48, enough to tell an office from a mobile
 * network or another country's, and no address of one person. Null when the address was no IP
 * address (UNRECOGNISED_NETWORK).
 */
export function sessionNetwork(network: ClientNetwork): string | null {
  if (isIPv4(network)) return `${network.split('.').slice(0, 3).join('.')}.0/24`;
  const groups = network.endsWith('::/64') ? ipv6Groups(network.slice(0, -3)) : undefined;
  if (!groups) return null;
  const head = groups.slice(0, 3);
  while (head.length > 0 && head.at(-1) === 0) head.pop();
  return `${prefix(head, head.length)}::/48`;
}
