import { fstatSync } from 'node:fs';
import type { Progress } from '../../ContentClient';
import type { Command } from '../command';
import { UsageError } from '../usage';

/** Standard input's length when it is a regular file (`< file`); a pipe has none. */
function stdinSize(): number | undefined {
  try {
    const st = fstatSync(0);
    return st.isFile() ? st.size : undefined;
  } catch {
    return undefined;
  }
}

/** `content upload <file>` or `content upload -` (standard input): prints the new content's id. */
export const upload: Command = async (ctx) => {
  const { args, flags, client, stdin } = ctx;
  ctx.needCredentials();
  const [file] = args;
  if (!file) throw new UsageError('upload needs a file');
  const uploadView = ctx.progress();
  const size = flags.size === undefined ? undefined : Number(flags.size);
  if (size !== undefined && (!Number.isSafeInteger(size) || size < 0))
    throw new UsageError('--size must be a byte count');
  try {
    const common = {
      owner: ctx.needOwner(),
      resume: flags.resume,
      concurrency: ctx.parallel,
      contentType: flags['content-type'],
      direct: flags.direct,
      signal: ctx.signal,
      onProgress: (p: Progress) => uploadView.update(p),
      onContentId: (cid: string) =>
        ctx.resumeWith(
          file === '-'
            ? `<the same input> | content upload - --resume ${cid}`
            : `content upload ${file} --resume ${cid}`,
        ),
    };
    const id =
      file === '-'
        ? await client.uploadStream(stdin, { ...common, size: size ?? stdinSize() })
        : await client.uploadFile(file, common);
    uploadView.stop();
    ctx.print(id, { id, file });
  } finally {
    uploadView.stop();
  }
  return 0;
};
