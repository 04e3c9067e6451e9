import type { Command } from '../command';
import { UsageError } from '../usage';

/** `content status <id>`: the content's state, its length when known, the byte ranges received, and the digests the service names (SHA-256, CRC-64/NVME, in hex). */
export const status: Command = async ({ args, client, signal, needOwner, needCredentials, print }) => {
  needCredentials();
  const [id] = args;
  if (!id) throw new UsageError('status needs a content id');
  const s = await client.status(needOwner(), id, signal);
  const ranges = s.received.map((r) => `${r.start}-${r.end}`).join(',');
  const digest = (s.sha256 ? `, sha-256 ${s.sha256}` : '') + (s.crc64nvme ? `, crc-64/nvme ${s.crc64nvme}` : '');
  print(`${id}: ${s.state}, total ${s.total ?? 'unknown'}, received ${ranges || 'nothing'}${digest}`, { id, ...s });
  return 0;
};
