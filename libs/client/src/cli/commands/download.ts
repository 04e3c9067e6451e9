import type { Command } from '../command';
import { UsageError } from '../usage';

/** `content download <id> <file>`: resumes a partial download unless --restart; prints the length and SHA-256. */
export const download: Command = async (ctx) => {
  const { args, flags, client } = ctx;
  ctx.needCredentials();
  const [id, file] = args;
  if (!id || !file) throw new UsageError('download needs a content id and a file');
  if (flags.sha256 !== undefined && !/^[0-9a-fA-F]{64}$/.test(flags.sha256))
    throw new UsageError('--sha256 takes a SHA-256 in hex (64 characters)');
  ctx.resumeWith(`content download ${id} ${file}`);
  const downloadView = ctx.progress();
  try {
    const r = await client.downloadFile(id, file, {
      owner: ctx.needOwner(),
      concurrency: ctx.parallel,
      sha256: flags.sha256,
      resume: !flags.restart,
      direct: flags.direct,
      signal: ctx.signal,
      onProgress: (p) => downloadView.update(p),
    });
    downloadView.stop();
    ctx.print(`${file}: ${r.bytes} bytes, sha256 ${r.sha256}`, { id, file, ...r });
  } finally {
    downloadView.stop();
  }
  return 0;
};
