import dns, { type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Which addresses an outbound request (a webhook, a client metadata document) may reach when
 * private targets are not allowed (production): the one classifier for the URL check up front and
 * the resolved address at connect time.
 *
 * IPv4: everything IANA lists as not globally reachable is refused. IPv6: only global unicast
 * (2000::/3) outside the special-purpose and documentation blocks is allowed, and a form that
 * carries an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
 * `64:ff9b::/96`, 6to4 `2002::/16`) is judged by that IPv4 address, so `::ffff:127.0.0.1` is
 * loopback while a NAT64 address of a public host (an IPv6-only network with DNS64) is public.
 */
const INTERNAL_V4 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  INTERNAL_V4.addSubnet(net, bits, 'ipv4');
}

const GLOBAL_UNICAST_V6 = new BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');

/** Inside 2000::/3 yet not a public host: IETF special purpose (Teredo, benchmarking, ORCHID…), documentation. */
const SPECIAL_V6 = new BlockList();
for (const [net, bits] of [
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20],
] as const) {
  SPECIAL_V6.addSubnet(net, bits, 'ipv6');
}

/** The 16 bytes of a valid IPv6 address (as `isIP` accepts it; a zone id is ignored). */
export function ipv6Bytes(address: string): Uint8Array {
  let text = address.split('%')[0]!.toLowerCase();
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const [a = 0, b = 0, c = 0, d = 0] = text
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, lastColon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const [left = '', right] = text.split('::');
  const head = left ? left.split(':') : [];
  const rest = right ? right.split(':') : [];
  const zeros = right === undefined ? 0 : 8 - head.length - rest.length - tail.length;
  const words = [
    ...head.map((w) => Number.parseInt(w, 16)),
    ...new Array(zeros).fill(0),
    ...rest.map((w) => Number.parseInt(w, 16)),
    ...tail,
  ];
  const bytes = new Uint8Array(16);
  words.forEach((word, i) => {
    bytes[2 * i] = word >> 8;
    bytes[2 * i + 1] = word & 0xff;
  });
  return bytes;
}

const zero = (bytes: Uint8Array, from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0);
const dotted = (bytes: Uint8Array, at: number) => Array.from(bytes.subarray(at, at + 4)).join('.');

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any. */
export function embeddedIPv4(bytes: Uint8Array): string | undefined {
  if (zero(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return dotted(bytes, 12);
  if (zero(bytes, 0, 12)) return dotted(bytes, 12);
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(bytes, 4, 12))
    return dotted(bytes, 12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return dotted(bytes, 2);
  return undefined;
}

/** True for an IP address (v4 or v6, brackets allowed) a production webhook may connect to. */
export function isPublicAddress(raw: string): boolean {
  const address = raw.replace(/^\[|\]$/g, '');
  const family = isIP(address);
  if (family === 4) return !INTERNAL_V4.check(address, 'ipv4');
  if (family !== 6) return false;
  const embedded = embeddedIPv4(ipv6Bytes(address));
  if (embedded !== undefined) return !INTERNAL_V4.check(embedded, 'ipv4');
  const plain = address.split('%')[0]!;
  return GLOBAL_UNICAST_V6.check(plain, 'ipv6') && !SPECIAL_V6.check(plain, 'ipv6');
}

/**
 * True for a URL host that is internal on its face: a `localhost` name (RFC 6761, with or without
 * the trailing dot) or an address literal that is not public. Other names are judged by the
 * addresses they resolve to, at connect time (`publicOnlyLookup`).
 */
export function isInternalHost(hostname: string): boolean {
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.+$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return isIP(host) !== 0 && !isPublicAddress(host);
}

/** The connect-time refusal; its message holds no address (it may reach the delivery status). */
export class AddressNotAllowedError extends Error {
  override name = 'AddressNotAllowedError';
  readonly code = 'ERR_ADDRESS_NOT_ALLOWED';
  constructor() {
    super('the host resolves to an address outbound requests may not reach');
  }
}

type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolve: Resolve = (hostname, options, callback) => dns.lookup(hostname, options, callback);

/**
 * A `lookup` for the HTTP client's socket: resolves as `dns.lookup` does (hosts file, system
 * resolver) and refuses the connection when any address of the name is not public, so the
 * address checked is the one connected to (no window for DNS rebinding) and a name with one
 * internal record among public ones is refused as a whole. Answers both call shapes of
 * `net.connect` (one address, or `all` for Happy Eyeballs).
 */
export function publicOnlyLookup(resolve: Resolve = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...(options as LookupOneOptions), all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address))) {
        return callback(new AddressNotAllowedError(), '', 0);
      }
      if ((options as LookupAllOptions).all) {
        return (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
      }
      const [first] = addresses as [LookupAddress];
      callback(null, first.address, first.family);
    });
  };
}
