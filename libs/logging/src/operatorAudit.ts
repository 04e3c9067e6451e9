import { userInfo } from 'node:os';
import { openAuditLog, type AuditOutcome, type AuditRecord } from './audit';

/**
 * For an operator's command line: writes the audit record of one change it made (or failed to
 * make) to AUDIT_LOG (default stderr; inside a container `/proc/1/fd/2` puts it on the container's
 * own stderr, with the service's records), by the operating-system user who ran it.
 */
export function auditOperatorChange(
  tool: string,
  command: string,
  outcome: AuditOutcome,
  detail: AuditRecord['detail'],
): void {
  const audit = openAuditLog(tool, process.env.AUDIT_LOG || 'stderr');
  try {
    audit.record({
      event: `admin.${command.trim().replace(/\s+/g, '.')}`,
      actor: { kind: 'operator', subject: operatorName() },
      outcome,
      detail,
    });
  } finally {
    audit.close();
  }
}

function operatorName(): string | null {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? null;
  }
}
