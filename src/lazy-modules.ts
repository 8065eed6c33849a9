/**
 * Node's modules that only some settings need, loaded on first use instead of at start.
 *
 * Loading `https` loads `tls`, `crypto` and OpenSSL's certificate handling with it: measured on
 * Node 24, about 3 MiB of heap and 2.5 MiB of Node's own code pages more in every process that
 * merely imports it; `crypto` alone about 1 MiB and 2 MiB. The node agent's defaults (plain HTTP
 * endpoints, no basic auth, OTLP over http://) use neither, and on every compute node that memory
 * belongs to the jobs. Each is asked of Node when a setting needs it: `process.getBuiltinModule`
 * hands back the module already loaded after the first call, synchronously.
 *
 * The single executable gains all of it: its bundle is CommonJS. An npm install on Node 22 and
 * later loads TLS at start anyway, since an ES module import of `node:http` (the OpenTelemetry
 * Prometheus exporter's, too) reads http's lazy `WebSocket` exports, which load undici, `http2`
 * and `tls`: about 14 MiB more than the same process loading `http` as CommonJS.
 */
import type * as Crypto from 'node:crypto';
import type * as Https from 'node:https';

/** `node:https`: TLS endpoints, and https:// servers to read from. */
export function lazyHttps(): typeof Https {
  return process.getBuiltinModule('node:https');
}

/** `node:crypto`: basic auth's password digests. */
export function lazyCrypto(): typeof Crypto {
  return process.getBuiltinModule('node:crypto');
}
