import { spawn } from 'node:child_process';

/**
 * Runs `script` in a child Node whose `stream` (stdout or stderr) nobody reads for `lagMs`, then
 * reads all of it: a log reader that falls behind. Returns the child's exit code and what it wrote.
 */
export async function readAfterLag(
  script: string,
  stream: 'stdout' | 'stderr',
  lagMs = 1000,
): Promise<{ code: number | null; text: string }> {
  // The other stream goes where the test's own does (a failing child says why there).
  const stdio: ['ignore', 'pipe' | 'inherit', 'pipe' | 'inherit'] =
    stream === 'stdout' ? ['ignore', 'pipe', 'inherit'] : ['ignore', 'inherit', 'pipe'];
  const child = spawn(process.execPath, ['-e', script], { stdio });
  const out = child[stream]!;
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  out.pause();
  await new Promise((r) => setTimeout(r, lagMs));
  let text = '';
  out.setEncoding('utf8');
  out.on('data', (chunk: string) => (text += chunk));
  out.resume();
  return { code: await closed, text };
}
