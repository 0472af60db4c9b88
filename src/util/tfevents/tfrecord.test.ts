import { crc32c } from '@aws-crypto/crc32c';
import { describe, expect, it } from 'vitest';
import { frameRecord, maskedCrc32c, unframeRecords } from './tfrecord.ts';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('TFRecord framing', () => {
  it('uses CRC32C (Castagnoli): the check value of "123456789" is 0xe3069283', () => {
    expect(crc32c(bytes('123456789')) >>> 0).toBe(0xe3069283);
  });

  it("masks the CRC as TensorFlow's crc32c::Mask does: rotate right 15, add 0xa282ead8 mod 2^32", () => {
    // 0xe3069283 rotated right by 15 is 0x2507c60d; plus 0xa282ead8 is 0xc78ab0e5.
    expect(maskedCrc32c(bytes('123456789'))).toBe(0xc78ab0e5);
    expect(maskedCrc32c(new Uint8Array(0))).toBe(0xa282ead8); // the CRC of nothing is 0
  });

  it('frames a record as length (u64 LE), its masked CRC, the data, the data masked CRC', () => {
    const data = bytes('hello');
    const framed = frameRecord(data);
    const view = new DataView(framed.buffer);
    expect(framed.length).toBe(8 + 4 + 5 + 4);
    expect(view.getBigUint64(0, true)).toBe(5n);
    expect(view.getUint32(8, true)).toBe(maskedCrc32c(framed.subarray(0, 8)));
    expect(new TextDecoder().decode(framed.subarray(12, 17))).toBe('hello');
    expect(view.getUint32(17, true)).toBe(maskedCrc32c(data));
  });

  it('reads back every record, and a last record cut short anywhere as torn bytes, not an error', () => {
    const records = ['first', '', 'third record'].map(bytes);
    const whole = Buffer.concat(records.map(frameRecord));
    const read = unframeRecords(whole);
    expect(read.records.map((r) => new TextDecoder().decode(r))).toEqual(['first', '', 'third record']);
    expect(read.tornBytes).toBe(0);
    const lastStart = whole.length - frameRecord(records[2]!).length;
    for (let cut = lastStart + 1; cut < whole.length; cut++) {
      const torn = unframeRecords(whole.subarray(0, cut));
      expect(torn.records.length).toBe(2);
      expect(torn.wholeBytes).toBe(lastStart);
      expect(torn.tornBytes).toBe(cut - lastStart);
    }
  });

  it('refuses a record whose length or data does not match its CRC', () => {
    const framed = Buffer.from(frameRecord(bytes('payload')));
    const badData = Buffer.from(framed);
    badData[14]! ^= 1;
    expect(() => unframeRecords(badData, 'f')).toThrow(/f: the data CRC of the record at byte 0/);
    const badLength = Buffer.from(framed);
    badLength[0]! ^= 1;
    expect(() => unframeRecords(badLength, 'f')).toThrow(/the length CRC/);
  });
});
