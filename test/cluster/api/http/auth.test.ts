import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { authError, clock, KEY, removeTmpDirs, T0, tmp, tokenOf, verify } from '../../../support/auth-fixtures.js';
import { AuthError, redact } from '../../../../src/cluster/http/failure.js';
import {
  keyFileSigner,
  needsRenewal,
  noAuth,
  parseTokenText,
  scontrolToken,
  signHs256,
  staticToken,
  tokenFile,
} from '../../../../src/cluster/api/http/auth.js';

afterEach(async () => {
  removeTmpDirs();
});

describe('parseTokenText', () => {
  it('reads a bare token or the SLURM_JWT= line of scontrol output', () => {
    expect(parseTokenText('  abc.def.ghi \n')).toBe('abc.def.ghi');
    expect(parseTokenText('SLURM_JWT=abc.def.ghi\n')).toBe('abc.def.ghi');
    expect(parseTokenText('# refreshed by cron\nexport SLURM_JWT="abc.def.ghi"\n')).toBe('abc.def.ghi');
    expect(parseTokenText('some banner\nSLURM_JWT=abc.def.ghi\n')).toBe('abc.def.ghi');
    expect(parseTokenText('\n \n')).toBeUndefined();
    expect(parseTokenText('two words')).toBeUndefined();
  });

  it('round-trips any token-shaped string in either form', () => {
    const token = fc.stringMatching(/^[A-Za-z0-9_-]{1,40}(\.[A-Za-z0-9_-]{1,40}){0,2}$/);
    fc.assert(
      fc.property(token, (t) => parseTokenText(`SLURM_JWT=${t}\r\n`) === t && parseTokenText(`\t${t}\n`) === t),
    );
  });
});

describe('needsRenewal', () => {
  it('renews with 20% of the lifetime left, or 30 s when that is larger', () => {
    expect(needsRenewal(T0 + 1439, T0, T0 + 1800)).toBe(false);
    expect(needsRenewal(T0 + 1441, T0, T0 + 1800)).toBe(true);
    expect(needsRenewal(T0 + 29, T0, T0 + 60)).toBe(false);
    expect(needsRenewal(T0 + 31, T0, T0 + 60)).toBe(true);
    expect(needsRenewal(T0 + 5000, T0, T0 + 1800)).toBe(true);
  });
});

describe('redact', () => {
  it('removes JWTs, SLURM_JWT= values and bearer tokens', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJyb290In0.sig_nature-x';
    const out = redact(`error: SLURM_JWT=secretvalue; got ${jwt}; Authorization: Bearer kube-token-1`);
    expect(out).not.toMatch(/secretvalue|eyJ|kube-token-1/);
  });
});

describe('none and static sources', () => {
  it('noAuth sends nothing', async () => {
    expect(await noAuth().headers()).toEqual({});
  });

  it('a static token takes the user from its sun claim unless given', async () => {
    const jwt = await signHs256(KEY, 'slurm', T0, T0 + 60);
    expect(await staticToken({ token: jwt }).headers()).toEqual({
      'X-SLURM-USER-TOKEN': jwt,
      'X-SLURM-USER-NAME': 'slurm',
    });
    expect(await staticToken({ token: ' opaque ', userName: 'alice' }).headers()).toEqual({
      'X-SLURM-USER-TOKEN': 'opaque',
      'X-SLURM-USER-NAME': 'alice',
    });
    expect(await staticToken({ token: 'opaque' }).headers()).toEqual({ 'X-SLURM-USER-TOKEN': 'opaque' });
    expect(staticToken({ token: jwt }).describe()).not.toContain(jwt);
    expect(() => staticToken({ token: '  ' })).toThrow(AuthError);
  });
});

describe('tokenFile', () => {
  it('re-reads the file when it is rewritten, in either format', async () => {
    const dir = tmp();
    const path = join(dir, 'token');
    const a = await signHs256(KEY, 'root', T0, T0 + 60);
    const b = await signHs256(KEY, 'slurm', T0 + 1, T0 + 3600);
    writeFileSync(path, `${a}\n`);
    const src = tokenFile({ path });
    expect(await src.headers()).toEqual({ 'X-SLURM-USER-TOKEN': a, 'X-SLURM-USER-NAME': 'root' });
    writeFileSync(path, `SLURM_JWT=${b}\n`);
    expect(await src.headers()).toEqual({ 'X-SLURM-USER-TOKEN': b, 'X-SLURM-USER-NAME': 'slurm' });
    expect(src.describe()).toBe(`token file ${path}`);
  });

  it('fails with the path, not the content, when the file is missing or empty', async () => {
    const dir = tmp();
    const path = join(dir, 'token');
    const src = tokenFile({ path, userName: 'root' });
    expect((await authError(src.headers())).message).toMatch(new RegExp(`${path}.*ENOENT`));
    writeFileSync(path, '\n');
    expect((await authError(src.headers())).message).toMatch(/holds no token/);
  });
});

describe('keyFileSigner', () => {
  it('signs HS256 tokens that verify with the key, with sun, iat and exp = iat + lifetime', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'jwt_hs256.key'), KEY);
    const c = clock();
    const src = keyFileSigner({ keyFile: join(dir, 'jwt_hs256.key'), lifetimeSec: 1800, now: c.now });
    const h = await src.headers();
    expect(h['X-SLURM-USER-NAME']).toBe('root');
    const claims = await verify(h['X-SLURM-USER-TOKEN'] as string);
    expect(claims).toMatchObject({ sun: 'root', iat: T0, exp: T0 + 1800 });
    expect(src.describe()).toMatch(/HS256 signer \(key file .*jwt_hs256.key, user root, lifetime 1800 s\)/);
  });

  it('keeps the token until less than 20% of its lifetime is left', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'k'), KEY);
    const c = clock();
    const src = keyFileSigner({ keyFile: join(dir, 'k'), user: 'slurm', lifetimeSec: 1000, now: c.now });
    const first = await tokenOf(src);
    c.advance(790);
    expect(await tokenOf(src)).toBe(first);
    c.advance(20);
    const second = await tokenOf(src);
    expect(second).not.toBe(first);
    expect(await verify(second)).toMatchObject({ sun: 'slurm', iat: T0 + 810, exp: T0 + 1810 });
  });

  it('re-reads a rotated key on invalidate()', async () => {
    const dir = tmp();
    const keyFile = join(dir, 'k');
    writeFileSync(keyFile, KEY);
    const src = keyFileSigner({ keyFile, now: clock().now });
    await verify(await tokenOf(src));
    const rotated = Buffer.from('a-completely-different-signing-key-000');
    writeFileSync(keyFile, rotated);
    await verify(await tokenOf(src)); // still the cached key: no rotation seen without invalidate
    src.invalidate();
    const t = await tokenOf(src);
    await expect(verify(t)).rejects.toThrow();
    expect(await verify(t, rotated)).toMatchObject({ sun: 'root' });
  });

  it('reports an unreadable or empty key file without its content', async () => {
    const dir = tmp();
    const src = keyFileSigner({ keyFile: join(dir, 'missing') });
    expect((await authError(src.headers())).message).toMatch(/cannot read JWT key file .*missing: ENOENT/);
    writeFileSync(join(dir, 'empty'), '');
    expect((await authError(keyFileSigner({ keyFile: join(dir, 'empty') }).headers())).message).toMatch(/is empty/);
  });
});

describe('scontrolToken', () => {
  /** A fake scontrol: logs its arguments, prints what `out` holds (or runs `body`). */
  function fakeScontrol(dir: string, body = `cat "${dir}/out"`): string {
    const script = join(dir, 'scontrol');
    writeFileSync(script, `#!/bin/sh\necho "$@" >> "${dir}/calls"\n${body}\n`);
    chmodSync(script, 0o755);
    return script;
  }
  const calls = (dir: string): string[] => readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');

  it('runs scontrol token username=U lifespan=S once for concurrent callers and parses SLURM_JWT=', async () => {
    const dir = tmp();
    const jwt = await signHs256(KEY, 'root', T0, T0 + 600);
    writeFileSync(join(dir, 'out'), `SLURM_JWT=${jwt}\n`);
    const src = scontrolToken({ command: fakeScontrol(dir), user: 'root', lifespanSec: 600, now: clock().now });
    const all = await Promise.all([src.headers(), src.headers(), src.headers()]);
    for (const h of all) expect(h).toEqual({ 'X-SLURM-USER-TOKEN': jwt, 'X-SLURM-USER-NAME': 'root' });
    expect(calls(dir)).toEqual(['token username=root lifespan=600']);
    expect(src.describe()).not.toContain(jwt);
  });

  it('renews before the exp claim of the token it got, and after invalidate()', async () => {
    const dir = tmp();
    const c = clock();
    // scontrol may grant less than asked: the token's own exp (T0+100) rules, not the lifespan.
    writeFileSync(join(dir, 'out'), `SLURM_JWT=${await signHs256(KEY, 'root', T0, T0 + 100)}\n`);
    const src = scontrolToken({ command: fakeScontrol(dir), lifespanSec: 1800, now: c.now });
    await src.headers();
    c.advance(69);
    await src.headers();
    expect(calls(dir)).toHaveLength(1);
    c.advance(2);
    await src.headers();
    expect(calls(dir)).toHaveLength(2);
    src.invalidate();
    await src.headers();
    expect(calls(dir)).toHaveLength(3);
    expect(calls(dir)[0]).toBe('token lifespan=1800');
  });

  it('fails clearly, with secrets redacted, when scontrol fails, hangs or prints no token', async () => {
    const dir = tmp();
    const leaky = fakeScontrol(dir, 'echo "scontrol: error: SLURM_JWT=leakedvalue eyJabc.eyJdef.ghi" >&2; exit 1');
    const failed = await authError(scontrolToken({ command: leaky }).headers());
    expect(failed.message).toMatch(/token failed \(exit 1\)/);
    expect(failed.message).not.toMatch(/leakedvalue|eyJabc/);

    const hung = fakeScontrol(dir, 'exec sleep 30');
    expect((await authError(scontrolToken({ command: hung, timeoutMs: 200 }).headers())).message).toMatch(
      /did not finish within 200 ms/,
    );

    const silent = fakeScontrol(dir, 'echo "nothing here"');
    expect((await authError(scontrolToken({ command: silent }).headers())).message).toMatch(/no SLURM_JWT= line/);
    expect((await authError(scontrolToken({ command: join(dir, 'absent') }).headers())).message).toMatch(/not found/);
  });
});
