//! The stack tree of many stacks: the trie flamewatch/storage/frames.py's `build_stack_tree` documents,
//! in its node order (the root, then each depth in turn, a depth's nodes sorted by parent, then frame).
//!
//! The trie is walked once with a hash map from (parent, frame) to node, each stack from its root frame
//! down; the nodes it made (far fewer than the frames walked) are then numbered in that order. Walking is
//! linear in the frames; numbering sorts the nodes of one depth at a time.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The tree: `parent` and `frame` per node (node 0 is the root: parent -1, frame -1), `leaf` per stack.
#[derive(Debug, PartialEq, Eq)]
pub struct Tree {
    pub parent: Vec<i64>,
    pub frame: Vec<i64>,
    pub leaf: Vec<i64>,
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

/// Stack i is `frames[offsets[i]..offsets[i + 1]]`, leaf first (pprof's order); every frame is in
/// [0, width). Err names what is wrong with the input.
pub fn build(offsets: &[i64], frames: &[i64], width: i64) -> Result<Tree, String> {
    check(offsets, frames, width)?;
    let stacks = offsets.len().saturating_sub(1);
    // The trie in the order the walk makes its nodes; node 0 is the root.
    let mut parent: Vec<usize> = vec![usize::MAX];
    let mut frame: Vec<i64> = vec![-1];
    let mut depth: Vec<u32> = vec![0];
    let mut map = NodeMap::default();
    let mut leaf = Vec::with_capacity(stacks);
    let width = width as u64;
    for i in 0..stacks {
        let mut node = 0usize;
        for &f in frames[offsets[i] as usize..offsets[i + 1] as usize].iter().rev() {
            let key = node as u64 * width + f as u64;
            let above = node;
            node = *map.entry(key).or_insert_with(|| {
                parent.push(above);
                frame.push(f);
                depth.push(depth[above] + 1);
                parent.len() - 1
            });
        }
        leaf.push(node);
    }
    drop(map);
    let number = level_order(&parent, &frame, &depth);
    let mut out = Tree { parent: vec![0; parent.len()], frame: vec![0; parent.len()], leaf: Vec::with_capacity(stacks) };
    for (node, &n) in number.iter().enumerate() {
        out.parent[n] = if node == 0 { -1 } else { number[parent[node]] as i64 };
        out.frame[n] = frame[node];
    }
    out.leaf.extend(leaf.iter().map(|&node| number[node] as i64));
    Ok(out)
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

fn check(offsets: &[i64], frames: &[i64], width: i64) -> Result<(), String> {
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
        if last as u64 > frames.len() as u64 {
            return Err(format!("offsets end at {} but there are {} frames", last, frames.len()));
        }
    }
    if let Some(&bad) = frames.iter().find(|&&f| f < 0 || f >= width) {
        return Err(format!("frame {} is outside [0, {})", bad, width));
    }
    let nodes_bound = (frames.len() as u64 + 1).checked_mul(width as u64);
    if nodes_bound.is_none() {
        return Err(format!("{} frames of width {} overflow the node keys", frames.len(), width));
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
        let tree = build(&offsets, &frames, 6).unwrap();
        // Depth 1: (root, 0)=1, (root, 5)=2; depth 2: (1, 1)=3, (2, 0)=4; depth 3: (3, 2)=5, (3, 3)=6.
        assert_eq!(tree.parent, vec![-1, 0, 0, 1, 2, 3, 3]);
        assert_eq!(tree.frame, vec![-1, 0, 5, 1, 0, 2, 3]);
        assert_eq!(tree.leaf, vec![5, 6, 3, 0, 4]);
    }

    #[test]
    fn no_stacks_is_the_root_alone() {
        let tree = build(&[0], &[], 1).unwrap();
        assert_eq!(tree, Tree { parent: vec![-1], frame: vec![-1], leaf: vec![] });
        assert_eq!(build(&[], &[], 1).unwrap().leaf, Vec::<i64>::new());
    }

    #[test]
    fn input_out_of_range_is_refused() {
        assert!(build(&[0, 1], &[7], 6).unwrap_err().contains("frame 7"));
        assert!(build(&[0, 2], &[1], 6).unwrap_err().contains("offsets end at 2"));
        assert!(build(&[1, 0], &[1], 6).unwrap_err().contains("decrease"));
    }
}
