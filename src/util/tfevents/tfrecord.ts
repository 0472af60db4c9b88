import { crc32c } from '@aws-crypto/crc32c';

/**
 * TFRecord framing, the container of TensorBoard event files: each record is
 *   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
 * CRC32C comes from @aws-crypto/crc32c (the AWS SDK's pure-JavaScript one) rather than a table
 * written here: the checksum is what every reader verifies, so it must be the well-tested one.
 */

const MASK_DELTA = 0xa282ead8;

/** TFRecord's mask: rotate right by 15 bits, add a constant (mod 2^32), so a CRC of CRCs is not a fixed point. */
export function maskedCrc32c(data: Uint8Array): number {
  const crc = crc32c(data) >>> 0;
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + MASK_DELTA) >>> 0;
}

/** One record framed: 8 + 4 + data.length + 4 bytes. */
export function frameRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(16 + data.length);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

export interface UnframedRecords {
  /** The whole records in file order, each checked against both of its CRCs. */
  records: Uint8Array[];
  /** Bytes of a last record cut short (a killed writer); they start at `wholeBytes`. */
  tornBytes: number;
  /** Bytes of the file up to the end of the last whole record. */
  wholeBytes: number;
}

/**
 * The records of a TFRecord file. A last record cut short is reported, not thrown: a run killed
 * mid-write leaves one. A record whose length or data fails its CRC is corruption and throws.
 */
export function unframeRecords(buf: Uint8Array, what = 'TFRecord data'): UnframedRecords {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const records: Uint8Array[] = [];
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < 12) break;
    const length = view.getBigUint64(at, true);
    if (view.getUint32(at + 8, true) !== maskedCrc32c(buf.subarray(at, at + 8)))
      throw new Error(`${what}: the length CRC of the record at byte ${at} does not match`);
    const end = at + 12 + Number(length) + 4;
    if (length > BigInt(buf.length) || end > buf.length) break;
    const data = buf.subarray(at + 12, end - 4);
    if (view.getUint32(end - 4, true) !== maskedCrc32c(data))
      throw new Error(`${what}: the data CRC of the record at byte ${at} does not match`);
    records.push(data);
    at = end;
  }
  return { records, tornBytes: buf.length - at, wholeBytes: at };
}
