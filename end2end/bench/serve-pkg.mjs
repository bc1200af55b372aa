// Serving another client build than the binary's own to a bench's page (`BENCH_PKG_DIRS` of stream.mjs and
// longsession.mjs): client changes compare in one run without building the server.
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Serves the client build in `dir` instead of the binary's: wasm-bindgen's `chatwire.js` and `chatwire_bg.wasm`, or,
 * when `dir` is a split build's whole `pkg` directory (it holds `__wasm_split.<hash>.js`), every file of it, found
 * by its kind for the page's own three (the page names the binary's hashes) and by name for the rest.
 */
export async function servePkg(page, dir) {
  const names = await fs.readdir(dir);
  if (names.some((name) => /^__wasm_split\.[^.]+\.js$/.test(name))) {
    const own = (pattern) => names.find((name) => pattern.test(name));
    const kinds = [
      [/^chatwire\.[^.]+\.js$/, 'text/javascript'],
      [/^chatwire\.[^.]+\.wasm$/, 'application/wasm'],
      [/^__wasm_split\.[^.]+\.js$/, 'text/javascript'],
    ];
    // The loader imports the glue by its own name; the page imported it by the binary's. Two names would be two
    // module instances, the loader's never initialized, so the loader is served naming the glue the page asked for.
    let pageGlue;
    await page.route(/\/pkg\/[^/]+$/, async (route) => {
      const requested = new URL(route.request().url()).pathname.slice('/pkg/'.length);
      const kind = kinds.find(([pattern]) => pattern.test(requested));
      const name = kind ? own(kind[0]) : names.includes(requested) ? requested : undefined;
      if (!name) return route.continue();
      const contentType = name.endsWith('.wasm') ? 'application/wasm' : name.endsWith('.js') ? 'text/javascript' : undefined;
      let body = await fs.readFile(path.join(dir, name));
      if (kind === kinds[0]) pageGlue = requested;
      if (kind === kinds[2] && pageGlue) body = body.toString('utf8').replaceAll(`./${own(kinds[0][0])}`, `./${pageGlue}`);
      return route.fulfill({ body, contentType });
    });
    return;
  }
  const [js, wasm] = await Promise.all([
    fs.readFile(path.join(dir, 'chatwire.js')),
    fs.readFile(path.join(dir, 'chatwire_bg.wasm')),
  ]);
  await page.route(/\/pkg\/chatwire\.[^/]*\.js$/, (route) =>
    route.fulfill({ body: js, contentType: 'text/javascript' }),
  );
  await page.route(/\/pkg\/chatwire\.[^/]*\.wasm$/, (route) =>
    route.fulfill({ body: wasm, contentType: 'application/wasm' }),
  );
}
