// A command's stdout or stderr as the sandbox returns it: bytes up to a cap, the rest counted.
/** Bytes kept up to a cap; beyond it only counted, as code points (UTF-8 lead bytes). */
export class CappedStream {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private frozen = false;
  droppedChars = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    if (this.frozen) return;
    const room = Math.max(0, this.cap - this.kept);
    if (room > 0) {
      const taken = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(taken);
      this.kept += taken.length;
    }
    for (let i = room; i < chunk.length; i++) {
      if (((chunk[i] as number) & 0xc0) !== 0x80) this.droppedChars++;
    }
  }

  freeze(): void {
    this.frozen = true;
  }

  buffer(): Buffer {
    return Buffer.concat(this.chunks, this.kept);
  }
}
