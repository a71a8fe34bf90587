// Type declarations of lib/report/pprof-decode.js: a bounded reader of pprof's profile.proto.

/** Malformed protobuf, or more repeated elements than allowed. */
export class DecodeError extends Error {}

export interface DecodedProfile {
  sampleType: { type: number; unit: number }[];
  sample: { locationId: number[]; value: number[]; label: { key: number; str: number; num: number }[] }[];
  location: { id: number; line: { functionId: number; line: number }[] }[];
  function: { id: number; name: number; filename: number }[];
  stringTable: string[];
  timeNanos: number;
  durationNanos: number;
  period: number;
}

/** profile.proto bytes -> the fields the report uses; int64 fields signed; throws DecodeError. */
export function decodeProfile(buf: Buffer, options: { maxElements: number }): DecodedProfile;
