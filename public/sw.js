// chatwire's service worker: keeps the page shell and the content-hashed assets, so the installed app opens
// without the server and shows that it cannot reach it. It never touches /api (every request there, streams
// included, goes straight to the network) nor anything of another origin.
//
// Pages and the public files (icons, manifest) are network first: they come from the server whenever it
// answers, and the copy kept is the last one it served. Content-hashed /pkg files never change under their name,
// so they come from the cache once kept; /pkg files without a hash (`./x dev`) are never kept. When the kept
// shell names a new build, the previous build's files are dropped.

const PAGES = 'chatwire-pages-v1';
const ASSETS = 'chatwire-assets-v1';
// Pages kept for the paths visited (each session has its own); the oldest go first.
const MAX_PAGES = 30;
const PUBLIC_FILES = ['/favicon.svg', '/manifest.webmanifest', '/icon-192.png', '/icon-512.png'];

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const page = await fetch('/', { cache: 'no-store', credentials: 'same-origin' });
      if (page.ok) {
        await keepPage(new Request('/'), page);
      }
      await (await caches.open(ASSETS)).addAll(PUBLIC_FILES).catch(() => {});
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name !== PAGES && name !== ASSETS) {
          await caches.delete(name);
        }
      }
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin || url.pathname.startsWith('/api/')) {
    return;
  }
  if (request.mode === 'navigate') {
    event.respondWith(page(request));
  } else if (isHashed(url.pathname)) {
    event.respondWith(hashedAsset(request));
  } else if (PUBLIC_FILES.includes(url.pathname)) {
    event.respondWith(publicFile(request));
  }
});

async function page(request) {
  const key = pageKey(request);
  try {
    const response = await fetch(request);
    if (response.ok && (response.headers.get('content-type') || '').startsWith('text/html')) {
      await keepPage(key, response.clone());
      return response;
    }
    // A proxy's 502 while chatwire is down: the kept page says more than the proxy's.
    if (response.status >= 500) {
      return (await caches.match(key, { cacheName: PAGES })) || response;
    }
    return response;
  } catch (offline) {
    const kept = await caches.match(key, { cacheName: PAGES });
    if (kept) {
      return kept;
    }
    // A path never opened here: the start page, which shows the server as unreachable and recovers by itself.
    if (await caches.match('/', { cacheName: PAGES })) {
      return Response.redirect('/', 302);
    }
    throw offline;
  }
}

// One page per path: the query (never used by chatwire's pages) is left out.
function pageKey(request) {
  const url = new URL(request.url);
  return new Request(url.origin + url.pathname);
}

// `/pkg/name.<hash>.ext`, as cargo-leptos' `hash-files` names them (URL-safe base64, at least 16 characters).
function isHashed(path) {
  const parts = path.startsWith('/pkg/') ? path.slice(5).split('.') : [];
  return parts.length === 3 && parts[1].length >= 16 && /^[A-Za-z0-9_-]+$/.test(parts[1]);
}

async function publicFile(request) {
  const cache = await caches.open(ASSETS);
  try {
    const response = await fetch(request);
    if (response.ok) {
      await cache.put(request, response.clone());
    }
    return response;
  } catch (offline) {
    const kept = await cache.match(request);
    if (kept) {
      return kept;
    }
    throw offline;
  }
}

async function hashedAsset(request) {
  const cache = await caches.open(ASSETS);
  const kept = await cache.match(request);
  if (kept) {
    return kept;
  }
  const response = await fetch(request);
  if (response.ok) {
    await cache.put(request, response.clone());
  }
  return response;
}

// Keeps a page, and the assets its HTML names, so an offline reload finds the whole shell. A page naming a
// WASM module no kept page named before is a new build: the older build's hashed files are dropped. (The page
// names its module in a preload; its script is in the page itself.)
async function keepPage(key, response) {
  const html = await response.clone().text();
  const named = assetsNamedIn(html);
  const pages = await caches.open(PAGES);
  await pages.put(key, response);
  const keys = await pages.keys();
  for (const old of keys.slice(0, Math.max(0, keys.length - MAX_PAGES))) {
    await pages.delete(old);
  }
  const assets = await caches.open(ASSETS);
  const module = named.find((path) => path.endsWith('.wasm'));
  const keptNames = (await assets.keys()).map((request) => new URL(request.url).pathname);
  if (module && !keptNames.includes(module)) {
    for (const path of keptNames) {
      if (path.startsWith('/pkg/') && !named.includes(path)) {
        await assets.delete(path);
      }
    }
  }
  await Promise.all(
    named
      .filter((path) => !keptNames.includes(path))
      .map((path) => assets.add(path).catch(() => {})),
  );
}

function assetsNamedIn(html) {
  const found = new Set();
  for (const match of html.matchAll(/["'](\/pkg\/[A-Za-z0-9._\-]+)["']/g)) {
    if (isHashed(match[1])) {
      found.add(match[1]);
    }
  }
  return [...found];
}
