// The soak's figures and verdict: a table, then each finding with what is needed to look into it.
const MiB = 1024 * 1024;

function fmtBytes(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e3).toFixed(1)} kB`;
}

/** Builds the rows and the verdict from what the soak recorded. */
function summarize({ ledger, stats, faults, http, sink, expectations, unexpectedExits, timing }) {
  const acked = [...ledger.contents.values()];
  const bytes = acked.reduce((n, c) => n + c.size, 0);
  const outside = (f) => !faults.inWindow(f.sentAt ?? f.from, f.at ?? f.to);
  const http500 = http.serverErrors.filter((e) => e.status === 500);
  const http500Outside = http500.filter(outside);
  const signInFailuresOutside = stats.signIns.failed.filter(outside);
  // A request still refused 30 s after the last fault window it met: the system did not recover for it.
  const stuckRequests = http.exhausted.filter((e) => !faults.inWindow(e.at - 30, e.at));
  const byKind = new Map();
  for (const f of faults.faults) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
  const recoveries = faults.faults.filter((f) => f.recovery != null).map((f) => f.recovery);
  const longest = faults.faults.reduce(
    (m, f) => (f.recovery != null && f.recovery > (m?.recovery ?? -1) ? f : m),
    null,
  );
  const notRecovered = faults.faults.filter((f) => f.end != null && f.recovery == null);
  const slow = faults.faults.filter((f) => f.recovery != null && f.recovery > 30);
  const counts = {
    lost: ledger.count('lost'),
    lostUpload: ledger.count('lostUpload'),
    corrupt: ledger.count('corrupt'),
    stuck: ledger.count('stuck'),
    stuckRequests: stuckRequests.length,
    resurrected: ledger.count('resurrected'),
    wrongStatus: ledger.count('wrongStatus') + stats.unexpected.length,
    unreadable: ledger.count('unreadable'),
    http500Outside: http500Outside.length,
    lostEvents: expectations.lostEvents.length,
    doubledEvents: expectations.doubledEvents.length,
    phantomEvents: expectations.phantomEvents.length,
    badSignatures: sink.badSignatures,
    signInFailuresOutside: signInFailuresOutside.length,
    signInBroken: ledger.count('signIn'),
    crashes: unexpectedExits.length,
    notRecovered: notRecovered.length,
    slowRecoveries: slow.length,
  };
  const rows = [
    [
      'traffic',
      `${timing.trafficS.toFixed(0)} s, then settle ${timing.settleS.toFixed(1)} s, read-back ${timing.readBackS.toFixed(1)} s`,
    ],
    [
      'uploads acknowledged',
      `${acked.length} (${fmtBytes(bytes)}); ${acked.filter((c) => c.ranges > 1).length} in several ranges, ` +
        `${acked.filter((c) => c.large).length} over 64 MiB (largest ${(Math.max(0, ...acked.map((c) => c.size)) / MiB).toFixed(1)} MiB), ` +
        `${acked.filter((c) => c.how.startsWith('one-shot')).length} one-shot`,
    ],
    [
      'upload requests',
      `${stats.uploads.failed ?? 0} uploads without an id (answer lost or refused), ${stats.resumes} resumes by HEAD, ` +
        `${stats.restartsTold} uploadRestarted answers, ${stats.lateCompletions} completed after the traffic`,
    ],
    [
      'downloads checked',
      `${stats.downloads.whole} whole, ${stats.downloads.ranges} ranges, ${stats.downloads.heads} HEADs during traffic; ` +
        `${stats.readBackOk} read back at the end, ${stats.readBeforeDelete} read before deletion`,
    ],
    [
      'deletions',
      `${stats.deleted} ready contents, ${stats.deletedUnfinished} unfinished uploads; ${stats.goneChecked} checked 404 at the end`,
    ],
    [
      'sign-ins',
      `${stats.signIns.ok} sign-ins, ${stats.signIns.refreshes} refreshes, ${stats.signIns.sidCalls} /v1 calls by auth.sid; ` +
        `${stats.signIns.failed.length} failures (${signInFailuresOutside.length} outside faults)`,
    ],
    [
      'webhook events',
      `${sink.events.size} distinct (${sink.deliveries} deliveries, ${sink.redeliveries()} redelivered); ` +
        `${expectations.expected} expected, ${expectations.unknownFacts.length} of contents never acknowledged`,
    ],
    [
      'faults',
      faults.faults.length
        ? `${faults.faults.length}: ${[...byKind].map(([k, n]) => `${k} ×${n}`).join(', ')}`
        : 'none',
    ],
    [
      'recovery after a fault',
      recoveries.length
        ? `longest ${longest.recovery.toFixed(1)} s (${longest.kind} at ${longest.start.toFixed(0)} s), median ` +
          `${recoveries.sort((a, b) => a - b)[Math.floor(recoveries.length / 2)].toFixed(1)} s`
        : 'no fault',
    ],
    [
      'HTTP answers',
      `${[...http.statusCounts]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s} ×${n}`)
        .join(', ')}; ` +
        `${http.connectionErrors} connection errors; 500s: ${http500.length} (${http500Outside.length} outside faults); ` +
        `${http.exhausted.length} requests out of retries`,
    ],
  ];
  const verdictRows = [
    ['lost (acknowledged, then 404)', counts.lost],
    ['lost unfinished uploads (404 mid-upload)', counts.lostUpload],
    ['corrupt', counts.corrupt],
    ['stuck (not completed within 30 s after the faults)', counts.stuck],
    ['requests refused for 30 s after the faults', counts.stuckRequests],
    ['unreadable at the read-back', counts.unreadable],
    ['resurrected after DELETE', counts.resurrected],
    ['wrong status', counts.wrongStatus],
    ['500s outside a fault window', counts.http500Outside],
    ['lost events', counts.lostEvents],
    ['doubled events (two ids, one fact)', counts.doubledEvents],
    ['events of facts that did not happen', counts.phantomEvents],
    ['bad webhook signatures', counts.badSignatures],
    ['sign-in failures outside faults', counts.signInFailuresOutside],
    ['sign-in guarantees broken', counts.signInBroken],
    ['processes that exited by themselves', counts.crashes],
    ['recoveries over 30 s (or none)', counts.slowRecoveries + counts.notRecovered],
  ];
  const failed = verdictRows.some(([, n]) => n > 0);
  return { rows, verdictRows, failed, http500Outside, signInFailuresOutside, notRecovered, slow, stuckRequests };
}

function print(out, summary) {
  const width = Math.max(...[...summary.rows, ...summary.verdictRows].map(([k]) => k.length));
  out.write('\n');
  for (const [k, v] of summary.rows) out.write(`  ${k.padEnd(width)}  ${v}\n`);
  out.write('\n');
  for (const [k, v] of summary.verdictRows) out.write(`  ${k.padEnd(width)}  ${v}${v ? '   <-- FAIL' : ''}\n`);
  out.write(`\nsoak: ${summary.failed ? 'FAILED' : 'passed'}\n`);
}

module.exports = { summarize, print, fmtBytes };
