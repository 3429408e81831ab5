//! The stack tree of many stacks: the trie flamewatch/storage/frames.py's `build_stack_tree` documents,
//! in its node order (the root, then each depth in turn, a depth's nodes sorted by parent, then frame).
//!
//! The trie is walked once with a hash map from (parent, frame) to node, each stack from its root frame
//! down; the nodes it made (far fewer than the frames walked) are then numbered in that order. Walking is
//! linear in the frames; numbering sorts the nodes of one depth at a time.
//!
//! A stack's items are frames, or locations that each stand for a run of consecutive frames (a location's
//! lines, innermost first), so a flush's stacks are walked without first being expanded into frames. The
//! walk starts each stack where it leaves the one before: the root-side frames the two share are not
//! looked up again (in the bench corpus's real Go profiles, 62 % of a heap profile's stack entries and
//! 15 % of a CPU profile's are shared with the sample before).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The tree: `parent` and `frame` per node (node 0 is the root: parent -1, frame -1), `leaf` per stack.
#[derive(Debug, PartialEq, Eq)]
pub struct Tree {
    pub parent: Vec<i64>,
    pub frame: Vec<i64>,
    pub leaf: Vec<i64>,
}

/// Each location's frames: location l is frames `first[l]..first[l] + length[l]`, innermost first.
pub struct Runs<'a> {
    pub first: &'a [i64],
    pub length: &'a [i64],
}

/// Hashes the one u64 a key is with SplitMix64's finalizer: std's SipHash would cost more than the walk.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(b) ^ (self.0 >> 56);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

type NodeMap = HashMap<u64, usize, BuildHasherDefault<KeyHasher>>;

/// The trie in the order the walk makes its nodes (node 0 is the root), and the path of the last stack.
struct Trie {
    parent: Vec<usize>,
    frame: Vec<i64>,
    depth: Vec<u32>,
    map: NodeMap,
    width: u64,
    path: Vec<(i64, usize)>, // (frame, node) of the last stack walked, root side first
}

impl Trie {
    fn new(width: i64) -> Trie {
        Trie { parent: vec![usize::MAX], frame: vec![-1], depth: vec![0], map: NodeMap::default(),
               width: width as u64, path: Vec::new() }
    }

    /// The leaf node of a stack given root side first.
    fn walk(&mut self, root_first: impl Iterator<Item = i64>) -> usize {
        let mut node = 0usize;
        let mut d = 0usize;
        let mut shared = true;
        for f in root_first {
            if shared && d < self.path.len() && self.path[d].0 == f {
                node = self.path[d].1;
            } else {
                shared = false;
                node = self.child(node, f);
                if d < self.path.len() {
                    self.path[d] = (f, node);
                } else {
                    self.path.push((f, node));
                }
            }
            d += 1;
        }
        self.path.truncate(d);
        node
    }

    fn child(&mut self, above: usize, f: i64) -> usize {
        let (parent, frame, depth) = (&mut self.parent, &mut self.frame, &mut self.depth);
        *self.map.entry(above as u64 * self.width + f as u64).or_insert_with(|| {
            parent.push(above);
            frame.push(f);
            depth.push(depth[above] + 1);
            parent.len() - 1
        })
    }

    /// The tree in its documented order, with the walk's leaf nodes renumbered.
    fn finish(self, leaf: &[usize]) -> Tree {
        let Trie { parent, frame, depth, map, .. } = self;
        drop(map);
        let number = level_order(&parent, &frame, &depth);
        let mut out = Tree { parent: vec![0; parent.len()], frame: vec![0; parent.len()], leaf: Vec::with_capacity(leaf.len()) };
        for (node, &n) in number.iter().enumerate() {
            out.parent[n] = if node == 0 { -1 } else { number[parent[node]] as i64 };
            out.frame[n] = frame[node];
        }
        out.leaf.extend(leaf.iter().map(|&node| number[node] as i64));
        out
    }
}

/// Stack i is `items[offsets[i]..offsets[i + 1]]`, leaf first (pprof's order). Without `runs` every item
/// is a frame in [0, width); with them an item is a location, standing for its run of frames (each in
/// [0, width)). Err names what is wrong with the input.
pub fn build(offsets: &[i64], items: &[i64], width: i64, runs: Option<Runs>) -> Result<Tree, String> {
    let what = if runs.is_some() { "locations" } else { "frames" };
    check(offsets, items, width, what)?;
    let stacks = offsets.len().saturating_sub(1);
    let mut trie = Trie::new(width);
    let mut leaf = Vec::with_capacity(stacks);
    match runs {
        None => {
            check_items(items, width as u64, "frame")?;
            check_keys(items.len() as u64, width)?;
            for i in 0..stacks {
                let stack = &items[offsets[i] as usize..offsets[i + 1] as usize];
                leaf.push(trie.walk(stack.iter().rev().copied()));
            }
        }
        Some(runs) => {
            check_runs(&runs, width)?;
            check_items(items, runs.first.len() as u64, "location")?;
            check_keys(items.iter().map(|&l| runs.length[l as usize] as u64).sum(), width)?;
            for i in 0..stacks {
                let stack = &items[offsets[i] as usize..offsets[i + 1] as usize];
                let frames = stack.iter().rev().flat_map(|&l| {
                    let (first, length) = (runs.first[l as usize], runs.length[l as usize]);
                    (first..first + length).rev()
                });
                leaf.push(trie.walk(frames));
            }
        }
    }
    Ok(trie.finish(&leaf))
}

/// The number of each node in the tree's order: by depth, then parent's number, then frame.
fn level_order(parent: &[usize], frame: &[i64], depth: &[u32]) -> Vec<usize> {
    let levels = depth.iter().copied().max().unwrap_or(0) as usize + 1;
    let mut starts = vec![0usize; levels + 1];
    for &d in depth {
        starts[d as usize + 1] += 1;
    }
    for d in 0..levels {
        starts[d + 1] += starts[d];
    }
    let mut by_depth = vec![0usize; depth.len()];
    let mut next = starts.clone();
    for (node, &d) in depth.iter().enumerate() {
        by_depth[next[d as usize]] = node;
        next[d as usize] += 1;
    }
    let mut number = vec![0usize; depth.len()];
    let mut keyed: Vec<(usize, i64, usize)> = Vec::new();
    for d in 1..levels {
        keyed.clear();
        keyed.extend(by_depth[starts[d]..starts[d + 1]].iter().map(|&node| (number[parent[node]], frame[node], node)));
        keyed.sort_unstable();
        for (i, &(_, _, node)) in keyed.iter().enumerate() {
            number[node] = starts[d] + i;
        }
    }
    number
}

fn check(offsets: &[i64], items: &[i64], width: i64, what: &str) -> Result<(), String> {
    if width < 1 {
        return Err(format!("width {} is not positive", width));
    }
    if let Some(&first) = offsets.first() {
        if first < 0 {
            return Err(format!("offsets start at {}", first));
        }
    }
    if let Some(w) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(format!("offsets decrease at stack {}", w));
    }
    if let Some(&last) = offsets.last() {
        if last as u64 > items.len() as u64 {
            return Err(format!("offsets end at {} but there are {} {}", last, items.len(), what));
        }
    }
    Ok(())
}

fn check_items(items: &[i64], bound: u64, what: &str) -> Result<(), String> {
    if let Some(&bad) = items.iter().find(|&&x| x < 0 || x as u64 >= bound) {
        return Err(format!("{} {} is outside [0, {})", what, bad, bound));
    }
    Ok(())
}

/// Node keys are node * width + frame, and a walk makes at most one node per frame it walks.
fn check_keys(frames_walked: u64, width: i64) -> Result<(), String> {
    if (frames_walked + 1).checked_mul(width as u64).map_or(true, |bound| bound > i64::MAX as u64) {
        return Err(format!("{} frames of width {} overflow the node keys", frames_walked, width));
    }
    Ok(())
}

fn check_runs(runs: &Runs, width: i64) -> Result<(), String> {
    if runs.first.len() != runs.length.len() {
        return Err(format!("{} run starts but {} run lengths", runs.first.len(), runs.length.len()));
    }
    let bad = runs.first.iter().zip(runs.length).position(|(&f, &n)| f < 0 || n < 1 || f.checked_add(n).map_or(true, |end| end > width));
    if let Some(l) = bad {
        return Err(format!("location {}'s frames {}+{} are outside [0, {})", l, runs.first[l], runs.length[l], width));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_prefixes_are_one_path_and_nodes_are_in_level_order() {
        // Stacks leaf first: [2, 1, 0], [3, 1, 0], [1, 0], [] and [0, 5].
        let offsets = [0, 3, 6, 8, 8, 10];
        let frames = [2, 1, 0, 3, 1, 0, 1, 0, 0, 5];
        let tree = build(&offsets, &frames, 6, None).unwrap();
        // Depth 1: (root, 0)=1, (root, 5)=2; depth 2: (1, 1)=3, (2, 0)=4; depth 3: (3, 2)=5, (3, 3)=6.
        assert_eq!(tree.parent, vec![-1, 0, 0, 1, 2, 3, 3]);
        assert_eq!(tree.frame, vec![-1, 0, 5, 1, 0, 2, 3]);
        assert_eq!(tree.leaf, vec![5, 6, 3, 0, 4]);
    }

    #[test]
    fn locations_stand_for_their_runs_of_frames() {
        // Location 0 is frames [0, 1] (0 inlined into 1), location 1 is frame 2 alone, location 2 frame 3.
        let runs = Runs { first: &[0, 2, 3], length: &[2, 1, 1] };
        let by_location = build(&[0, 2, 4, 5], &[1, 0, 2, 0, 0], 6, Some(runs)).unwrap();
        let by_frame = build(&[0, 3, 6, 8], &[2, 0, 1, 3, 0, 1, 0, 1], 6, None).unwrap();
        assert_eq!(by_location, by_frame);
    }

    #[test]
    fn no_stacks_is_the_root_alone() {
        let tree = build(&[0], &[], 1, None).unwrap();
        assert_eq!(tree, Tree { parent: vec![-1], frame: vec![-1], leaf: vec![] });
        assert_eq!(build(&[], &[], 1, None).unwrap().leaf, Vec::<i64>::new());
    }

    #[test]
    fn input_out_of_range_is_refused() {
        assert!(build(&[0, 1], &[7], 6, None).unwrap_err().contains("frame 7"));
        assert!(build(&[0, 2], &[1], 6, None).unwrap_err().contains("offsets end at 2"));
        assert!(build(&[1, 0], &[1], 6, None).unwrap_err().contains("decrease"));
        let runs = || Runs { first: &[0, 5], length: &[2, 2] };
        assert!(build(&[0, 1], &[0], 6, Some(runs())).unwrap_err().contains("location 1's frames 5+2"));
        let runs = Runs { first: &[0], length: &[1] };
        assert!(build(&[0, 1], &[1], 6, Some(runs)).unwrap_err().contains("location 1 is outside [0, 1)"));
    }
}
