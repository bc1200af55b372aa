// End-to-end HTTP checks against the self-contained server binary: hashed assets, the stylesheet in the page, health
// endpoint, 404s.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { getPage, httpGet, linkTags, serverForSuite } from './support.mjs';

const ASSETS = [{ kind: 'wasm', rel: 'preload', contentType: /^application\/wasm\s*(;.*)?$/i }];

const ENCODINGS = [
  { name: 'br', decode: zlib.brotliDecompressSync },
  { name: 'gzip', decode: zlib.gunzipSync },
];

function hasVaryAcceptEncoding(headers) {
  return (headers.vary ?? '').split(',').some((v) => v.trim().toLowerCase() === 'accept-encoding' || v.trim() === '*');
}

function describeResponse(res) {
  return JSON.stringify({ status: res.status, headers: res.headers });
}

describe('chatwire http', () => {
  const suite = serverForSuite();

  test('hashed assets: content types, caching, precompression, ETag', { timeout: 60_000 }, async (t) => {
    const page = await getPage(suite.server.url);
    assert.equal(page.status, 200);
    const links = linkTags(page.body.toString('utf8'));

    for (const asset of ASSETS) {
      await t.test(asset.kind, async () => {
        const nameRe = new RegExp(`^/pkg/chatwire\\.[^/]+\\.${asset.kind}$`);
        const link = links.find((l) => (l.rel ?? '').split(/\s+/).includes(asset.rel) && nameRe.test(new URL(l.href ?? '', suite.server.url).pathname));
        assert.ok(link, `no <link rel="${asset.rel}" href="/pkg/chatwire.<hash>.${asset.kind}"> in the HTML; links: ${JSON.stringify(links)}`);
        const url = new URL(link.href, suite.server.url);
        assert.equal(url.origin, suite.server.origin, `${link.href} is not served by the app`);
        // The same preload in the page's Link header, which the browser acts on before the page's bytes are in.
        const header = (page.headers.link ?? '').split(/,\s*(?=<)/).find((entry) => entry.startsWith(`<${url.pathname}>`));
        assert.ok(header, `the page's Link header lacks ${url.pathname}: ${page.headers.link}`);
        assert.ok(header.split(/;\s*/).includes(`rel=${asset.rel}`), `${header} is not rel=${asset.rel}`);
        if (asset.kind === 'wasm') {
          assert.ok(header.split(/;\s*/).includes('as=fetch') && header.split(/;\s*/).includes('crossorigin'), `${header} would not be reused by the module's fetch`);
        }

        const plain = await httpGet(url);
        const ctx = `${url.pathname} (no Accept-Encoding): ${describeResponse(plain)}`;
        assert.equal(plain.status, 200, ctx);
        assert.match(plain.headers['content-type'] ?? '', asset.contentType, ctx);
        assert.equal(plain.headers['content-encoding'], undefined, ctx);
        const cacheControl = plain.headers['cache-control'] ?? '';
        assert.match(cacheControl, /\bimmutable\b/i, ctx);
        assert.match(cacheControl, /\bmax-age=31536000\b/i, ctx);
        assert.ok(hasVaryAcceptEncoding(plain.headers), `Vary lacks Accept-Encoding: ${ctx}`);
        assert.ok(plain.body.length > 0, `empty body: ${ctx}`);
        if (asset.kind === 'wasm') {
          assert.deepEqual([...plain.body.subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d], `not a wasm module: ${ctx}`);
        }

        const variants = [{ name: 'none', headers: {}, res: plain }];

        const identity = await httpGet(url, { 'accept-encoding': 'identity' });
        const idCtx = `${url.pathname} (identity): ${describeResponse(identity)}`;
        assert.equal(identity.status, 200, idCtx);
        assert.equal(identity.headers['content-encoding'], undefined, idCtx);
        assert.ok(hasVaryAcceptEncoding(identity.headers), `Vary lacks Accept-Encoding: ${idCtx}`);
        assert.ok(identity.body.equals(plain.body), `identity body differs from plain body: ${idCtx}`);
        variants.push({ name: 'identity', headers: { 'accept-encoding': 'identity' }, res: identity });

        for (const enc of ENCODINGS) {
          const headers = { 'accept-encoding': enc.name };
          const res = await httpGet(url, headers);
          const encCtx = `${url.pathname} (${enc.name}): ${describeResponse(res)}`;
          assert.equal(res.status, 200, encCtx);
          assert.equal(res.headers['content-encoding'], enc.name, encCtx);
          assert.match(res.headers['content-type'] ?? '', asset.contentType, encCtx);
          assert.match(res.headers['cache-control'] ?? '', /\bimmutable\b/i, encCtx);
          assert.match(res.headers['cache-control'] ?? '', /\bmax-age=31536000\b/i, encCtx);
          assert.ok(hasVaryAcceptEncoding(res.headers), `Vary lacks Accept-Encoding: ${encCtx}`);
          let decoded;
          assert.doesNotThrow(() => {
            decoded = enc.decode(res.body);
          }, `body does not decode as ${enc.name}: ${encCtx}`);
          assert.ok(decoded.equals(plain.body), `${enc.name} body decodes to ${decoded.length} bytes that differ from the ${plain.body.length}-byte identity body`);
          variants.push({ name: enc.name, headers, res });
        }

        // Revalidation must work for whichever representation the browser happened to cache.
        for (const v of variants) {
          const etag = v.res.headers.etag;
          assert.ok(etag, `no ETag on ${url.pathname} (${v.name}): ${describeResponse(v.res)}`);
          assert.match(etag, /^(W\/)?"[^"]*"$/, `malformed ETag ${etag} on ${url.pathname} (${v.name})`);
          const revalidated = await httpGet(url, { ...v.headers, 'if-none-match': etag });
          assert.equal(revalidated.status, 304, `If-None-Match ${etag} on ${url.pathname} (${v.name}): ${describeResponse(revalidated)}`);
          assert.equal(revalidated.body.length, 0, `304 with a body on ${url.pathname} (${v.name})`);
        }
      });
    }
  });

  test('the stylesheet is in the page, allowed by its nonce', async () => {
    const page = await getPage(suite.server.url);
    const html = page.body.toString('utf8');
    assert.deepEqual(
      linkTags(html).filter((l) => (l.rel ?? '').split(/\s+/).includes('stylesheet')),
      [],
      'no second request for the stylesheet',
    );
    const style = html.match(/<style nonce="([^"]+)">([\s\S]*?)<\/style>/);
    assert.ok(style, 'a <style> with a nonce in the page');
    const [, nonce, css] = style;
    assert.match(css, /\.app\b[^{]*\{/, 'it holds the app stylesheet');
    assert.ok(!/&(gt|lt|amp|quot);/.test(css), 'the stylesheet is not HTML-escaped');
    const policy = page.headers['content-security-policy'] ?? '';
    const styleSources = policy.split(';').map((d) => d.trim()).find((d) => d.startsWith('style-src')) ?? '';
    assert.ok(styleSources.split(/\s+/).includes(`'nonce-${nonce}'`), `style-src allows the page's nonce: ${policy}`);
    assert.ok(!styleSources.includes("'unsafe-inline'"), policy);

    // With the stylesheet and the script in it the page is ~75 KB: it is compressed as the browser asks.
    for (const { name, decode } of ENCODINGS) {
      const compressed = await httpGet(new URL('/', suite.server.url), { cookie: page.cookie, 'accept-encoding': name });
      assert.equal(compressed.headers['content-encoding'], name, describeResponse(compressed));
      const text = decode(compressed.body).toString('utf8');
      assert.match(text, /<style nonce="[^"]+">/, `the ${name} page decodes to the page`);
      assert.ok(compressed.body.length * 3 < text.length, `${name}: ${compressed.body.length} of ${text.length} B`);
    }
  });

  // `cargo leptos --split` adds a loader of the chunks, which imports the WASM's glue and is imported by it; the page
  // carries both merged into its one module script (src/server/boot_script.rs).
  test('the script is in the page: glue and chunk loader in one module, allowed by its nonce', async () => {
    const page = await getPage(suite.server.url);
    const html = page.body.toString('utf8');
    const links = linkTags(html);
    assert.deepEqual(links.filter((l) => l.rel === 'modulepreload'), [], 'no second request for a script');
    assert.ok(!/rel=modulepreload/.test(page.headers.link ?? ''), `Link: ${page.headers.link}`);
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.every(([, attrs]) => !/\bsrc=/.test(attrs)), 'no script is linked');
    const boot = scripts.find(([, attrs]) => /\btype="module"/.test(attrs));
    assert.ok(boot, 'a module script in the page');
    const [, attrs, source] = boot;
    const nonce = attrs.match(/\bnonce="([^"]+)"/)?.[1];
    assert.ok(nonce, `the module script has a nonce: ${attrs}`);
    assert.ok((page.headers['content-security-policy'] ?? '').includes(`'nonce-${nonce}'`), 'the policy allows it');
    assert.ok(!/&(gt|lt|amp|quot);/.test(source), 'the script is not HTML-escaped');
    assert.ok(!/^\s*import\b|[;}]\s*import\s*[*{"']/m.test(source), 'the script imports nothing');
    const wasm = links.find((l) => l.rel === 'preload' && /^\/pkg\/chatwire\.[^/]+\.wasm$/.test(l.href ?? ''))?.href;
    assert.ok(source.includes(`module_or_path: "${wasm}"`), 'the script starts the preloaded module');

    // The chunks the loader fetches, served like the other hashed assets.
    const chunks = [...source.matchAll(/["']\.\/((?:split|chunk)_[^"'/]+\.wasm)["']/g)].map((m) => m[1]);
    for (const split of ['split_session', 'split_tool_renderers']) {
      assert.ok(chunks.some((name) => name.startsWith(`${split}.`)), `the loader does not fetch ${split}: ${chunks}`);
    }
    assert.ok(source.includes('new URL("/pkg/",location.href)'), 'chunk addresses resolve against the package');
    // A split's own file (the biggest) is asked for before the small files it shares, which would take HTTP/1.1's
    // six connections first.
    const ownFile = source.indexOf('const instantiate = fetcher();');
    const sharedFiles = source.indexOf('const parallelStuff = deps.map(d => d());');
    assert.ok(ownFile >= 0 && sharedFiles > ownFile, "the loader asks for a split's shared files before its own");
    for (const name of chunks) {
      const url = new URL(`/pkg/${name}`, suite.server.url);
      const identity = (await httpGet(url)).body;
      const res = await httpGet(url, { 'accept-encoding': 'br' });
      const ctx = `${url.pathname}: ${describeResponse(res)}`;
      assert.equal(res.status, 200, ctx);
      assert.match(res.headers['content-type'] ?? '', /^application\/wasm$/i, ctx);
      assert.equal(res.headers['content-encoding'], 'br', ctx);
      assert.match(res.headers['cache-control'] ?? '', /\bimmutable\b/i, ctx);
      assert.ok(zlib.brotliDecompressSync(res.body).equals(identity), `brotli body differs: ${ctx}`);
    }
  });

  test('/api/health answers', async () => {
    const url = new URL('/api/health', suite.server.origin);
    const res = await httpGet(url);
    const ctx = describeResponse(res);
    assert.equal(res.status, 200, ctx);
    assert.match(res.headers['content-type'] ?? '', /\bjson\b/i, ctx);
    let body;
    assert.doesNotThrow(() => {
      body = JSON.parse(res.body.toString('utf8'));
    }, `not JSON: ${res.body.toString('utf8')}`);
    assert.ok(body !== null && typeof body === 'object' && 'status' in body, `no "status" field in ${JSON.stringify(body)}`);
  });

  test('unknown /pkg file is a 404', async () => {
    const url = new URL('/pkg/does-not-exist.js', suite.server.origin);
    const res = await httpGet(url);
    assert.equal(res.status, 404, describeResponse(res));
  });
});
