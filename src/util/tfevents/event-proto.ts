import protobuf from 'protobufjs';
import { z } from 'zod';

/**
 * The few protobuf messages of a TensorBoard event file, as TensorBoard's own protos define them
 * (tensorboard/compat/proto/event.proto, summary.proto, tensor.proto, tensor_shape.proto,
 * types.proto; the text plugin's metadata.py), declared here by field number and encoded by
 * protobufjs: the wire format (varints, zigzag, packed fields, float32) is theirs to get right,
 * and only the fields a scalar, a text or a histogram summary uses are declared.
 */
const root = protobuf.Root.fromJSON({
  nested: {
    tensorboard: {
      nested: {
        Event: {
          oneofs: { what: { oneof: ['file_version', 'summary'] } },
          fields: {
            wall_time: { type: 'double', id: 1 },
            step: { type: 'int64', id: 2 },
            file_version: { type: 'string', id: 3 },
            summary: { type: 'Summary', id: 5 },
          },
        },
        Summary: { fields: { value: { rule: 'repeated', type: 'SummaryValue', id: 1 } } },
        SummaryValue: {
          oneofs: { value: { oneof: ['simple_value', 'histo', 'tensor'] } },
          fields: {
            tag: { type: 'string', id: 1 },
            simple_value: { type: 'float', id: 2 },
            histo: { type: 'HistogramProto', id: 5 },
            tensor: { type: 'TensorProto', id: 8 },
            metadata: { type: 'SummaryMetadata', id: 9 },
          },
        },
        SummaryMetadata: {
          fields: {
            plugin_data: { type: 'PluginData', id: 1 },
            display_name: { type: 'string', id: 2 },
            summary_description: { type: 'string', id: 3 },
            data_class: { type: 'DataClass', id: 4 },
          },
        },
        PluginData: { fields: { plugin_name: { type: 'string', id: 1 }, content: { type: 'bytes', id: 2 } } },
        DataClass: {
          values: { DATA_CLASS_UNKNOWN: 0, DATA_CLASS_SCALAR: 1, DATA_CLASS_TENSOR: 2, DATA_CLASS_BLOB_SEQUENCE: 3 },
        },
        // summary.proto's HistogramProto: TensorBoard's histogram dashboard reads it (data_compat.py).
        HistogramProto: {
          fields: {
            min: { type: 'double', id: 1 },
            max: { type: 'double', id: 2 },
            num: { type: 'double', id: 3 },
            sum: { type: 'double', id: 4 },
            sum_squares: { type: 'double', id: 5 },
            bucket_limit: { rule: 'repeated', type: 'double', id: 6, options: { packed: true } },
            bucket: { rule: 'repeated', type: 'double', id: 7, options: { packed: true } },
          },
        },
        TensorProto: {
          fields: {
            dtype: { type: 'DataType', id: 1 },
            tensor_shape: { type: 'TensorShapeProto', id: 2 },
            string_val: { rule: 'repeated', type: 'bytes', id: 8 },
          },
        },
        TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dim', id: 2 } } },
        Dim: { fields: { size: { type: 'int64', id: 1 }, name: { type: 'string', id: 2 } } },
        // Only the types a summary here carries; the numbers are types.proto's.
        DataType: { values: { DT_INVALID: 0, DT_FLOAT: 1, DT_STRING: 7 } },
      },
    },
  },
});
const EventType = root.lookupType('tensorboard.Event');

/** What the first record of every event file says: the format version TensorBoard reads. */
export const FILE_VERSION = 'brain.Event:2';

/** The plugin whose dashboard shows a string tensor as (markdown) text. */
export const TEXT_PLUGIN = 'text';

/**
 * A histogram as summary.proto's HistogramProto holds it: bucket i counts the values up to
 * bucketLimit[i] (above bucketLimit[i - 1]); TensorBoard draws the first bucket from min and the
 * last to max.
 */
export interface Histogram {
  min: number;
  max: number;
  num: number;
  sum: number;
  sumSquares: number;
  bucketLimit: number[];
  bucket: number[];
}

/** One summary value: a scalar (stored as float32, TensorBoard's simple_value), a text or a histogram. */
export type EventValue =
  { tag: string; scalar: number } | { tag: string; text: string } | { tag: string; histogram: Histogram };

export type EventInput = { wallTime: number; step: number } & ({ fileVersion: string } | { values: EventValue[] });

function valueMessage(v: EventValue): Record<string, unknown> {
  if ('scalar' in v) return { tag: v.tag, simple_value: v.scalar };
  if ('histogram' in v) {
    const h = v.histogram;
    const histo = { min: h.min, max: h.max, num: h.num, sum: h.sum, sum_squares: h.sumSquares };
    return { tag: v.tag, histo: { ...histo, bucket_limit: h.bucketLimit, bucket: h.bucket } };
  }
  return {
    tag: v.tag,
    // A rank-0 string tensor under the text plugin, as TensorBoard's text summary writes it
    // (TextPluginData version 0 serializes to no bytes).
    metadata: { plugin_data: { plugin_name: TEXT_PLUGIN, content: new Uint8Array(0) }, data_class: 2 },
    tensor: { dtype: 7, tensor_shape: {}, string_val: [new TextEncoder().encode(v.text)] },
  };
}

/** One tensorflow.Event message's bytes (the data of one TFRecord). */
export function encodeEvent(e: EventInput): Uint8Array {
  const message = {
    wall_time: e.wallTime,
    step: e.step,
    ...('fileVersion' in e ? { file_version: e.fileVersion } : { summary: { value: e.values.map(valueMessage) } }),
  };
  return EventType.encode(EventType.fromObject(message)).finish();
}

const DecodedValueSchema = z.object({
  tag: z.string(),
  simple_value: z.number().optional(),
  histo: z
    .object({
      // proto3 leaves zeros out of the wire, so an absent number is 0.
      min: z.number().default(0),
      max: z.number().default(0),
      num: z.number().default(0),
      sum: z.number().default(0),
      sum_squares: z.number().default(0),
      bucket_limit: z.array(z.number()).default([]),
      bucket: z.array(z.number()).default([]),
    })
    .optional(),
  metadata: z.object({ plugin_data: z.object({ plugin_name: z.string() }).optional() }).optional(),
  tensor: z
    .object({ dtype: z.number().optional(), string_val: z.array(z.instanceof(Uint8Array)).optional() })
    .optional(),
});

const DecodedEventSchema = z.object({
  // proto3 leaves zeros out of the wire, so an absent number is 0.
  wall_time: z.number().default(0),
  step: z.number().default(0),
  file_version: z.string().optional(),
  summary: z.object({ value: z.array(DecodedValueSchema).optional() }).optional(),
});

/** A decoded event: its step and wall time, the file version (first record) or its values. */
export interface DecodedEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  values: Array<{ tag: string; scalar?: number; text?: string; histogram?: Histogram; plugin?: string }>;
}

/** The inverse of encodeEvent, for the fields it writes (validated: a stray shape is an error). */
export function decodeEvent(bytes: Uint8Array): DecodedEvent {
  const raw = EventType.toObject(EventType.decode(bytes), { longs: Number });
  const e = DecodedEventSchema.parse(raw);
  const decoder = new TextDecoder();
  return {
    wallTime: e.wall_time,
    step: e.step,
    ...(e.file_version ? { fileVersion: e.file_version } : {}),
    values: (e.summary?.value ?? []).map((v) => {
      const plugin = v.metadata?.plugin_data?.plugin_name;
      const strings = v.tensor?.string_val ?? [];
      const h = v.histo;
      return {
        tag: v.tag,
        ...(v.tensor === undefined && v.histo === undefined && v.simple_value !== undefined
          ? { scalar: v.simple_value }
          : {}),
        ...(strings.length > 0 ? { text: strings.map((s) => decoder.decode(s)).join('\n') } : {}),
        ...(h
          ? {
              histogram: {
                ...{ min: h.min, max: h.max, num: h.num, sum: h.sum, sumSquares: h.sum_squares },
                ...{ bucketLimit: h.bucket_limit, bucket: h.bucket },
              },
            }
          : {}),
        ...(plugin ? { plugin } : {}),
      };
    }),
  };
}
