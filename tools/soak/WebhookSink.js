// The soak's webhook receiver on 127.0.0.1: checks each delivery's signature with its owner's
// secret, answers 200, and keeps the distinct event ids per fact (type and content id) and how
// often each id came (at-least-once: the same id again is deduplicated, as a receiver should).
const http = require('node:http');
const { createHmac, timingSafeEqual } = require('node:crypto');

class WebhookSink {
  constructor() {
    /** owner → [secret] */
    this.secrets = new Map();
    /** event id → { type, content, owner, deliveries, firstAt } */
    this.events = new Map();
    /** `${type} ${contentId}` → Set of event ids */
    this.byFact = new Map();
    this.deliveries = 0;
    this.badSignatures = 0;
    this.malformed = 0;
    this.server = null;
  }

  addSecret(owner, secret) {
    this.secrets.set(owner, [...(this.secrets.get(owner) ?? []), secret]);
  }

  async start() {
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.receive(req.headers, Buffer.concat(chunks));
        res.statusCode = 200;
        res.end();
      });
    });
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${this.server.address().port}/hook`;
  }

  receive(headers, raw) {
    this.deliveries++;
    let event;
    try {
      event = JSON.parse(raw.toString());
    } catch {
      this.malformed++;
      return;
    }
    if (!this.verified(this.secrets.get(event.owner) ?? [], headers, raw)) this.badSignatures++;
    const id = headers['webhook-id'];
    if (!id || id !== event.id) {
      this.malformed++;
      return;
    }
    const known = this.events.get(id);
    if (known) {
      known.deliveries++;
      return;
    }
    this.events.set(id, {
      type: event.type,
      content: event.content?.id,
      owner: event.owner,
      deliveries: 1,
      firstAt: Date.now(),
    });
    const fact = `${event.type} ${event.content?.id}`;
    if (!this.byFact.has(fact)) this.byFact.set(fact, new Set());
    this.byFact.get(fact).add(id);
  }

  verified(secrets, headers, raw) {
    const ts = headers['webhook-timestamp'];
    if (!/^\d+$/.test(ts ?? '')) return false;
    const given = (headers['webhook-signature'] ?? '').split(' ').map((s) => Buffer.from(s));
    return secrets.some((secret) => {
      const expected = Buffer.from(`v1=${createHmac('sha256', secret).update(`${ts}.`).update(raw).digest('hex')}`);
      return given.some((g) => g.length === expected.length && timingSafeEqual(g, expected));
    });
  }

  /** The distinct event ids of a fact. */
  idsOf(type, contentId) {
    return this.byFact.get(`${type} ${contentId}`)?.size ?? 0;
  }

  redeliveries() {
    let n = 0;
    for (const e of this.events.values()) n += e.deliveries - 1;
    return n;
  }

  async stop() {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

module.exports = { WebhookSink };
