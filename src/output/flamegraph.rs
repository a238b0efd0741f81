//! Folded stacks → an interactive flame graph (SVG), written here rather than with the `inferno`
//! crate: inferno is CDDL-1.0 and lockcast is MIT OR Apache-2.0.
//!
//! The picture follows Brendan Gregg's FlameGraph.pl, which inferno also follows: one box per
//! frame, its width its share of the total weight, the root (`all`) at the bottom, children
//! sorted by name; a `<title>` per box is its tooltip (weight and share); a small embedded
//! script zooms on click, searches by regular expression (`Search`, or Ctrl-F) and prints the
//! share the matches cover. A differential graph ([`diff_svg`]) is sized by the patched profile
//! and coloured by each frame's change, as FlameGraph.pl's difference mode and inferno's
//! `diff-folded` draw it: red grew, blue shrank, white unchanged, the deeper the colour the
//! larger the change relative to the largest one. With `normalize` the base is scaled to the
//! patched total first, so the colour shows the change of the frame's share.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::analyses::flame::{Folded, Weight};

/// Image width in pixels (FlameGraph.pl's default).
const WIDTH: f64 = 1200.0;
/// Left and right margin.
const PAD: f64 = 10.0;
/// Height of one frame.
const FRAME_H: f64 = 16.0;
/// Space above the frames: title, subtitle, the Search and Reset controls.
const TOP: f64 = 64.0;
/// Space below the frames: the details line.
const BOTTOM: f64 = 28.0;
/// Frames narrower than this (pixels) are not drawn (FlameGraph.pl's `--minwidth`).
const MIN_WIDTH: f64 = 0.1;
/// Average glyph width of 12 px Verdana, for cutting labels to their box.
const CHAR_W: f64 = 7.0;

/// Text around the picture.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// The title line.
    pub title: String,
    /// A line under it saying what the widths are.
    pub subtitle: String,
}

struct Node {
    name: String,
    value: u64,
    base: u64,
    children: BTreeMap<String, usize>,
}

/// Stacks merged by common prefix; node 0 is `all`.
struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            nodes: vec![Node {
                name: "all".to_string(),
                value: 0,
                base: 0,
                children: BTreeMap::new(),
            }],
        }
    }

    fn add(&mut self, stack: &[String], value: u64, base: u64) {
        let mut at = 0;
        self.nodes[0].value += value;
        self.nodes[0].base += base;
        for frame in stack {
            let next = match self.nodes[at].children.get(frame) {
                Some(&i) => i,
                None => {
                    let i = self.nodes.len();
                    self.nodes.push(Node {
                        name: frame.clone(),
                        value: 0,
                        base: 0,
                        children: BTreeMap::new(),
                    });
                    self.nodes[at].children.insert(frame.clone(), i);
                    i
                }
            };
            self.nodes[next].value += value;
            self.nodes[next].base += base;
            at = next;
        }
    }

    fn depth(&self, at: usize) -> usize {
        self.nodes[at]
            .children
            .values()
            .map(|&c| 1 + self.depth(c))
            .max()
            .unwrap_or(0)
    }
}

/// One box to draw.
struct Placed {
    node: usize,
    depth: usize,
    /// Start and width as fractions of the total.
    x: f64,
    w: f64,
}

fn place(tree: &Tree) -> Vec<Placed> {
    let total = tree.nodes[0].value.max(1) as f64;
    let mut out = Vec::new();
    let mut todo = vec![(0usize, 0usize, 0.0f64)];
    while let Some((node, depth, x)) = todo.pop() {
        let w = tree.nodes[node].value as f64 / total;
        if w * (WIDTH - 2.0 * PAD) < MIN_WIDTH {
            continue;
        }
        out.push(Placed { node, depth, x, w });
        let mut cx = x;
        for &c in tree.nodes[node].children.values() {
            todo.push((c, depth + 1, cx));
            cx += tree.nodes[c].value as f64 / total;
        }
    }
    out.sort_by(|a, b| a.depth.cmp(&b.depth).then(a.x.total_cmp(&b.x)));
    out
}

/// The colour of a frame in an ordinary flame graph: FlameGraph.pl's "hot" palette, picked by a
/// hash of the name so that a frame has one colour in every graph.
fn hot(name: &str) -> (u8, u8, u8) {
    // FNV-1a: stable across runs and platforms, unlike std's hasher
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let v = |shift: u32| ((h >> shift) & 0xff) as f64 / 255.0;
    (
        (205.0 + 50.0 * v(0)) as u8,
        (230.0 * v(8)) as u8,
        (55.0 * v(16)) as u8,
    )
}

/// FlameGraph.pl's difference colour: red for growth, blue for shrinkage, white for none.
fn diff_colour(delta: f64, max: f64) -> (u8, u8, u8) {
    if max <= 0.0 || delta == 0.0 {
        return (255, 255, 255);
    }
    let pale = (210.0 * (1.0 - delta.abs() / max))
        .round()
        .clamp(0.0, 210.0) as u8;
    if delta > 0.0 {
        (255, pale, pale)
    } else {
        (pale, pale, 255)
    }
}

/// Black labels are unreadable on the deep blue of a frame that shrank a lot.
fn dark(r: u8, g: u8, b: u8) -> bool {
    0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b) < 110.0
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// `1234567` as `1,234,567`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            o.push(',');
        }
        o.push(c);
    }
    o
}

fn label(name: &str, px: f64) -> String {
    let fit = ((px - 6.0) / CHAR_W).floor();
    if fit < 3.0 {
        return String::new();
    }
    let fit = fit as usize;
    if name.chars().count() <= fit {
        name.to_string()
    } else {
        let cut: String = name.chars().take(fit - 2).collect();
        format!("{cut}..")
    }
}

fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * part as f64 / total as f64
    }
}

/// A flame graph of one profile.
pub fn svg(f: &Folded, labels: &Labels) -> String {
    let mut tree = Tree::new();
    for (s, w) in &f.stacks {
        tree.add(s, *w, 0);
    }
    let total = tree.nodes[0].value;
    let unit = f.weight.unit();
    render(&tree, labels, |n| {
        let tip = format!(
            "{} ({} {unit}, {:.2}%)",
            n.name,
            thousands(n.value),
            pct(n.value, total)
        );
        (tip, hot(&n.name))
    })
}

/// A differential flame graph: boxes sized by `patched`, coloured by the change from `base`
/// (with `normalize`, `base` scaled to `patched`'s total first: the change of share).
pub fn diff_svg(base: &Folded, patched: &Folded, normalize: bool, labels: &Labels) -> String {
    let mut tree = Tree::new();
    for (s, w) in &patched.stacks {
        tree.add(s, *w, 0);
    }
    for (s, w) in &base.stacks {
        tree.add(s, 0, *w);
    }
    let (bt, pt) = (tree.nodes[0].base, tree.nodes[0].value);
    let scale = if normalize && bt > 0 {
        pt as f64 / bt as f64
    } else {
        1.0
    };
    let delta = |n: &Node| n.value as f64 - n.base as f64 * scale;
    let max = tree
        .nodes
        .iter()
        .map(|n| delta(n).abs())
        .fold(0.0, f64::max);
    let unit = base.weight.unit();
    // sized by the patched profile, a path the patch removed has no width: say how much
    let gone: u64 = tree
        .nodes
        .iter()
        .filter(|n| n.value > 0)
        .flat_map(|n| n.children.values())
        .map(|&c| &tree.nodes[c])
        .filter(|c| c.value == 0)
        .map(|c| c.base)
        .sum();
    let mut labels = labels.clone();
    if gone > 0 {
        labels.subtitle.push_str(&format!(
            "; not drawn: {} {unit} ({:.2}%) of base paths absent from patched",
            thousands(gone),
            pct(gone, bt)
        ));
    }
    render(&tree, &labels, |n| {
        let d = delta(n);
        let tip = format!(
            "{} (base {} {unit}, {:.2}% → patched {} {unit}, {:.2}%; {}{:.2} points of share)",
            n.name,
            thousands(n.base),
            pct(n.base, bt),
            thousands(n.value),
            pct(n.value, pt),
            if pct(n.value, pt) >= pct(n.base, bt) {
                "+"
            } else {
                ""
            },
            pct(n.value, pt) - pct(n.base, bt),
        );
        (tip, diff_colour(d, max))
    })
}

fn render(tree: &Tree, labels: &Labels, style: impl Fn(&Node) -> (String, (u8, u8, u8))) -> String {
    let depth = tree.depth(0);
    let height = TOP + (depth as f64 + 1.0) * FRAME_H + BOTTOM;
    let span = WIDTH - 2.0 * PAD;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg" onload="init(evt)">
<style>
text {{ font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }}
#title {{ font-size: 17px; }}
g.f:hover rect {{ stroke: rgb(0,0,0); stroke-width: 0.5; cursor: pointer; }}
g.f text {{ pointer-events: none; }}
g.parent rect {{ opacity: 0.5; }}
.ctl {{ cursor: pointer; }}
</style>
<script type="text/ecmascript"><![CDATA[
{SCRIPT}
]]></script>
<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="rgb(248,248,248)"/>
<text id="title" x="{mid}" y="24" text-anchor="middle">{title}</text>
<text x="{mid}" y="44" text-anchor="middle">{subtitle}</text>
<text id="unzoom" class="ctl" x="{PAD}" y="24" style="opacity:0" onclick="unzoom()">Reset Zoom</text>
<text id="search" class="ctl" x="{sx}" y="24" text-anchor="end" onclick="search()">Search</text>
<text id="matched" x="{sx}" y="{dy}" text-anchor="end"> </text>
<text id="details" x="{PAD}" y="{dy}"> </text>
"#,
        mid = WIDTH / 2.0,
        title = esc(&labels.title),
        subtitle = esc(&labels.subtitle),
        sx = WIDTH - PAD,
        dy = height - 10.0,
    );
    for p in place(tree) {
        let n = &tree.nodes[p.node];
        let (tip, (r, g, b)) = style(n);
        let x = PAD + p.x * span;
        let w = p.w * span;
        let y = height - BOTTOM - (p.depth as f64 + 1.0) * FRAME_H;
        let _ = writeln!(
            s,
            r#"<g class="f" data-n="{name}" data-x="{fx:.9}" data-w="{fw:.9}" data-d="{d}" data-c="rgb({r},{g},{b})"><title>{tip}</title><rect x="{x:.2}" y="{y:.1}" width="{w:.2}" height="{h:.1}" fill="rgb({r},{g},{b})" rx="2" ry="2"/><text x="{tx:.2}" y="{ty:.1}"{ink}>{text}</text></g>"#,
            name = esc(&n.name),
            fx = p.x,
            fw = p.w,
            d = p.depth,
            tip = esc(&tip),
            h = FRAME_H - 1.0,
            tx = x + 3.0,
            ty = y + 11.5,
            text = esc(&label(&n.name, w)),
            ink = if dark(r, g, b) {
                r#" style="fill:rgb(255,255,255)""#
            } else {
                ""
            },
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Zoom, search and the details line; labels are re-cut to their box as FlameGraph.pl does.
const SCRIPT: &str = r#"var W = 1200, PAD = 10, CW = 7, frames = [], details, zoomed = false;
function init(evt) {
  frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  details = document.getElementById("details");
  frames.forEach(function (g) {
    g.addEventListener("click", function () { zoom(g); });
    g.addEventListener("mouseover", function () { details.textContent = g.querySelector("title").textContent; });
    g.addEventListener("mouseout", function () { details.textContent = " "; });
  });
  window.addEventListener("keydown", function (e) {
    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) { e.preventDefault(); search(); }
    if (e.keyCode === 27) { unzoom(); }
  });
}
function fit(g, x, w) {
  var r = g.querySelector("rect"), t = g.querySelector("text"), n = g.getAttribute("data-n");
  r.setAttribute("x", x); r.setAttribute("width", w); t.setAttribute("x", x + 3);
  var c = Math.floor((w - 6) / CW);
  t.textContent = c < 3 ? "" : (n.length <= c ? n : n.slice(0, c - 2) + "..");
}
function num(g, k) { return parseFloat(g.getAttribute("data-" + k)); }
function zoom(z) {
  var x0 = num(z, "x"), w0 = num(z, "w"), d0 = num(z, "d"), e = 1e-9, span = W - 2 * PAD;
  frames.forEach(function (g) {
    var x = num(g, "x"), w = num(g, "w"), d = num(g, "d");
    if (d < d0 && x <= x0 + e && x + w >= x0 + w0 - e) {
      g.style.display = ""; g.setAttribute("class", "f parent"); fit(g, PAD, span);
    } else if (d >= d0 && x >= x0 - e && x + w <= x0 + w0 + e) {
      g.style.display = ""; g.setAttribute("class", "f"); fit(g, PAD + (x - x0) / w0 * span, w / w0 * span);
    } else {
      g.style.display = "none";
    }
  });
  zoomed = true;
  document.getElementById("unzoom").style.opacity = 1;
}
function unzoom() {
  var span = W - 2 * PAD;
  frames.forEach(function (g) {
    g.style.display = ""; g.setAttribute("class", "f"); fit(g, PAD + num(g, "x") * span, num(g, "w") * span);
  });
  zoomed = false;
  document.getElementById("unzoom").style.opacity = 0;
}
function search() {
  var term = prompt("Search frames (regular expression); empty to clear", "");
  if (term === null) return;
  var re = null;
  if (term !== "") { try { re = new RegExp(term); } catch (err) { alert(err); return; } }
  var hits = [];
  frames.forEach(function (g) {
    var r = g.querySelector("rect");
    if (re && re.test(g.getAttribute("data-n"))) {
      r.setAttribute("fill", "rgb(230,0,230)");
      hits.push([num(g, "x"), num(g, "x") + num(g, "w")]);
    } else {
      r.setAttribute("fill", g.getAttribute("data-c"));
    }
  });
  hits.sort(function (a, b) { return a[0] - b[0]; });
  var covered = 0, end = -1;
  hits.forEach(function (h) {
    if (h[0] >= end) { covered += h[1] - h[0]; end = h[1]; }
    else if (h[1] > end) { covered += h[1] - end; end = h[1]; }
  });
  document.getElementById("matched").textContent = re ? "Matched: " + (100 * covered).toFixed(2) + "%" : " ";
}"#;

/// What the widths of a profile are, for the subtitle.
pub fn describe(f: &Folded) -> String {
    match f.weight {
        Weight::Wait => format!(
            "{} traced waits, {} ns of wait; width = share of the wait",
            thousands(f.waits),
            thousands(f.total())
        ),
        Weight::Count => format!(
            "{} traced waits; width = share of the waits",
            thousands(f.total())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_colours_point_the_way_of_the_change() {
        assert_eq!(diff_colour(5.0, 10.0), (255, 105, 105));
        assert_eq!(diff_colour(-10.0, 10.0), (0, 0, 255));
        assert_eq!(diff_colour(0.0, 10.0), (255, 255, 255));
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(18_730_000), "18,730,000");
    }

    #[test]
    fn labels_are_cut_to_their_box() {
        assert_eq!(label("folio_batch_move_lru", 500.0), "folio_batch_move_lru");
        assert_eq!(label("folio_batch_move_lru", 76.0), "folio_ba..");
        assert_eq!(label("folio_batch_move_lru", 20.0), "");
    }
}
