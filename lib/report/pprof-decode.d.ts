// Type declarations of lib/report/pprof-decode.js: a bounded reader of pprof's profile.proto.

/** Malformed protobuf, or more repeated elements than allowed. */
export class DecodeError extends Error {}

export interface DecodedProfile {
  sampleType: { type: number; unit: number }[];
  /** Empty when decoded with `samples: false` (forEachSample reads them). */
  sample: { locationId: number[]; value: number[]; label: { key: number; str: number; num: number }[] }[];
  /** How many samples the profile has. */
  sampleCount: number;
  location: { id: number; line: { functionId: number; line: number }[] }[];
  function: { id: number; name: number; filename: number }[];
  stringTable: string[];
  timeNanos: number;
  durationNanos: number;
  period: number;
}

/** One sample as forEachSample passes it: one object reused for every sample; `labelCount` of `label` are its. */
export interface SampleView {
  locationId: number[];
  value: number[];
  label: { key: number; str: number; num: number }[];
  labelCount: number;
}

/**
 * profile.proto bytes -> the fields the report uses; int64 fields signed; throws DecodeError.
 * `samples: false`: samples checked and counted, not kept.
 */
export function decodeProfile(buf: Buffer, options: { maxElements: number; samples?: boolean }): DecodedProfile;
/** Each sample of a profile decodeProfile has checked, in file order; throws DecodeError. */
export function forEachSample(buf: Buffer, visit: (sample: SampleView) => void): void;
