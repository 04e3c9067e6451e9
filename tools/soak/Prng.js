// A seeded pseudo-random generator (sfc32), so that a soak's plan (sizes, ranges, order, faults)
// is the same for the same seed. Each worker forks a stream of its own by label, so the plan of
// one worker does not depend on how fast another one runs.
const { createHash } = require('node:crypto');

class Prng {
  /** @param {string} seed any text; @param {string} [label] names a stream of its own */
  constructor(seed, label = '') {
    const h = createHash('sha256').update(`${seed}\0${label}`).digest();
    this.seed = String(seed);
    this.label = label;
    this.s = [h.readUInt32LE(0), h.readUInt32LE(4), h.readUInt32LE(8), h.readUInt32LE(12)];
    for (let i = 0; i < 12; i++) this.next();
  }

  /** A new independent stream derived from this one's seed. */
  fork(label) {
    return new Prng(this.seed, `${this.label}/${label}`);
  }

  /** A float in [0, 1). */
  next() {
    let [a, b, c, d] = this.s;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    this.s = [a, b, c, d];
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both included (exact up to 2^53). */
  int(min, max) {
    const span = max - min + 1;
    if (span <= 4294967296) return min + Math.floor(this.next() * span);
    return min + Math.floor((this.next() * 4294967296 + this.next() * 4294967296 * 4294967296) % span);
  }

  /** A float in [min, max). */
  float(min, max) {
    return min + this.next() * (max - min);
  }

  chance(p) {
    return this.next() < p;
  }

  pick(items) {
    return items[Math.floor(this.next() * items.length)];
  }

  /** A new array with the items in random order. */
  shuffle(items) {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
}

module.exports = { Prng };
