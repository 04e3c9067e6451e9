// What the soak was told: every content acknowledged as stored (and by which request), every
// deletion acknowledged, and the uploads that could not be finished yet. The read-back and the
// event check work from it.
class Ledger {
  constructor() {
    /** id → { id, owner, bytes (ContentBytes), size, state: 'live'|'deleting'|'deleted', ackAt, how, ranges, large, webhook } */
    this.contents = new Map();
    /** Uploads that never completed within their requests' budgets (retried after the traffic). */
    this.pending = new Set();
    /** Unfinished uploads deleted on purpose: id → { owner, deletedAt } (must stay 404, never complete). */
    this.deletedUnfinished = new Map();
    this.violations = [];
  }

  acknowledge(entry) {
    if (this.contents.has(entry.id)) return this.contents.get(entry.id);
    const e = { ...entry, state: 'live', liveSince: Date.now() };
    this.contents.set(e.id, e);
    return e;
  }

  live() {
    return [...this.contents.values()].filter((c) => c.state === 'live');
  }

  liveBytes() {
    let n = 0;
    for (const c of this.contents.values()) if (c.state !== 'deleted') n += c.size;
    return n;
  }

  /** A finding that fails the soak: { kind: 'lost'|'corrupt'|..., ...details }. */
  violation(v) {
    this.violations.push(v);
  }

  count(kind) {
    return this.violations.filter((v) => v.kind === kind).length;
  }
}

module.exports = { Ledger };
