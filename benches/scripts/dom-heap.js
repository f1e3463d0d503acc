// A browser-like heap: a DOM-ish tree of elements with attributes, class lists, styles and
// text, an event-listener table, and a parsed JSON API response.
const tags = ['div', 'span', 'a', 'li', 'ul', 'p', 'img', 'button', 'section', 'input'];
const words = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(' ');
let seed = 12345;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
function text(n) { let s = []; for (let i = 0; i < n; i++) s.push(words[rnd(words.length)]); return s.join(' '); }
function element(depth) {
  const tag = tags[rnd(tags.length)];
  const el = { tagName: tag.toUpperCase(), id: 'node-' + rnd(1e6), attributes: new Map(), classList: [], style: {}, children: [], listeners: [] };
  el.attributes.set('data-id', String(rnd(1e9)));
  if (tag === 'a') el.attributes.set('href', 'https://example.org/' + text(3).replace(/ /g, '/'));
  if (tag === 'img') el.attributes.set('src', '/static/img/' + rnd(5000) + '.png');
  for (let i = 0; i < 1 + rnd(4); i++) el.classList.push('c-' + words[rnd(words.length)]);
  if (rnd(3) === 0) el.style = { color: '#' + rnd(0xffffff).toString(16), margin: rnd(20) + 'px', display: rnd(2) ? 'flex' : 'block' };
  if (rnd(2) === 0) el.children.push({ nodeType: 3, data: text(3 + rnd(12)) });
  if (rnd(4) === 0) el.listeners.push({ type: 'click', handler: () => el.id.length });
  if (depth < 6) for (let i = 0; i < rnd(5); i++) el.children.push(element(depth + 1));
  return el;
}
const roots = [];
for (let i = 0; i < 2500; i++) roots.push(element(0));
const api = JSON.parse(JSON.stringify(Array.from({ length: 40000 }, (_, i) => ({ id: i, title: text(6), price: rnd(100000) / 100, tags: [words[rnd(20)], words[rnd(20)]], seller: { name: 'seller' + rnd(500), rating: rnd(50) / 10 } }))));
globalThis.keep = [roots, api];
setTimeout(() => {}, 120000);
