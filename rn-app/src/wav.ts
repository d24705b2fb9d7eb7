/**
 * A reader for the model set's clip: RIFF/WAVE, PCM (format tag 1), 16 kHz, mono, 16-bit
 * little-endian (`models/clip.wav`, made by `models/make_clip.sh`).
 *
 * Format source: the RIFF WAVE layout ("RIFF" size "WAVE", then chunks of 4-byte id +
 * 4-byte little-endian size, padded to even length; `fmt ` holds format tag, channels,
 * sample rate, byte rate, block align, bits per sample), as Python's `wave` module reads
 * it (`kit/modelset.py` `read_clip`). Never throws: returns the samples or a reason.
 */

export type ClipResult =
  | { readonly ok: true; readonly samples: Int16Array; readonly sampleRate: number }
  | { readonly ok: false; readonly reason: string };

function fourcc(view: DataView, offset: number): string {
  let s = '';
  for (let i = 0; i < 4; i++) {
    s += String.fromCharCode(view.getUint8(offset + i));
  }
  return s;
}

/**
 * Read the int16 samples `[N]` of a 16 kHz mono 16-bit PCM WAV file.
 *
 * @param bytes the whole file.
 */
export function readClip(bytes: Uint8Array): ClipResult {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 12 || fourcc(view, 0) !== 'RIFF' || fourcc(view, 8) !== 'WAVE') {
    return { ok: false, reason: 'not a RIFF/WAVE file' };
  }
  let offset = 12;
  let format: { tag: number; channels: number; rate: number; bits: number } | null = null;
  while (offset + 8 <= bytes.byteLength) {
    const id = fourcc(view, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (body + size > bytes.byteLength) {
      return { ok: false, reason: `chunk ${JSON.stringify(id)} runs past the end of the file` };
    }
    if (id === 'fmt ') {
      if (size < 16) {
        return { ok: false, reason: 'fmt chunk is shorter than 16 bytes' };
      }
      format = {
        tag: view.getUint16(body, true),
        channels: view.getUint16(body + 2, true),
        rate: view.getUint32(body + 4, true),
        bits: view.getUint16(body + 14, true),
      };
    } else if (id === 'data') {
      if (format === null) {
        return { ok: false, reason: 'data chunk before fmt chunk' };
      }
      if (format.tag !== 1 || format.channels !== 1 || format.rate !== 16000 || format.bits !== 16) {
        return {
          ok: false,
          reason: `not 16 kHz mono 16-bit PCM (format ${format.tag}, ${format.channels} ch, ` +
            `${format.rate} Hz, ${format.bits} bit)`,
        };
      }
      const count = Math.floor(size / 2);
      const samples = new Int16Array(count);
      for (let i = 0; i < count; i++) {
        samples[i] = view.getInt16(body + 2 * i, true);
      }
      return { ok: true, samples, sampleRate: format.rate };
    }
    offset = body + size + (size % 2);
  }
  return { ok: false, reason: 'no data chunk' };
}
