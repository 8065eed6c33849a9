/**
 * A promise rejected with no handler is a defect: the agent logs it, stops as on SIGTERM (its stop
 * runs, so what it changed is set back) and the command exits 70 for the service manager to restart
 * it. Without the handler Node ends the process at once with exit 1 and no stop. The agent here is
 * a stand-in whose start leaves a rejection unhandled: no real agent has one to trigger on purpose.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../support/tools.js';

const DIST = path.resolve('dist/src');
const url = (rel: string): string => pathToFileURL(path.join(DIST, rel)).href;

const SCRIPT = `
import { runUntilSignal, AgentDefect, DEFECT_EXIT } from ${JSON.stringify(url('cli/common.js'))};
import { createLogger } from ${JSON.stringify(url('log.js'))};
const logger = createLogger({ level: 'info', format: 'json', destination: process.stdout });
const agent = { async stop() { process.stdout.write('STOP RAN\\n'); } };
try {
  await runUntilSignal(async () => {
    setTimeout(() => void Promise.reject(new Error('nobody handles this')), 10);
    return agent;
  }, logger);
} catch (err) {
  process.stdout.write(err instanceof AgentDefect ? 'DEFECT\\n' : 'OTHER ' + err + '\\n');
  process.exitCode = DEFECT_EXIT;
}
`;

function run(): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

describe('an unhandled promise rejection', () => {
  it('is logged at error with its reason, the agent stops as on SIGTERM, and the exit is 70', async () => {
    let result: { code: number | null; out: string } | undefined;
    void run().then((r) => (result = r));
    const { code, out } = await waitFor('the stand-in agent to exit', () => result, 30_000);
    const logs = out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: string; msg: string; err?: { message: string }; cause?: string });
    const defect = logs.find((l) => l.msg.includes('rejected with no handler'));
    expect(defect?.level, out).toBe('error');
    expect(defect?.err?.message).toBe('nobody handles this');
    expect(logs.find((l) => l.msg === 'stopping')?.cause).toBe('unhandledRejection');
    expect(out).toContain('STOP RAN');
    expect(out).toContain('DEFECT');
    expect(code).toBe(70);
  });
});
