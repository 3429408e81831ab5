//! The distinct rows of an int64 matrix, in the order flamewatch/storage/frames.py's `unique_rows`
//! documents: each row is hashed to one u64 (the mix below, column by column), and the distinct rows are
//! ordered by that hash. The (hash, row) pairs are sorted once; numpy took a pass over the matrix per
//! column to hash and a stable sort of the hashes with their indices. Two different rows with one hash
//! are a collision, answered as `None`: the caller then falls back to an exact method.


/// The hash of one row; frames.py's `unique_rows` computes the same with numpy.
pub fn row_hash(row: &[i64]) -> u64 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for &c in row {
        h = (h ^ c as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
    }
    h
}

/// For a matrix of `n` rows of `width` columns (row-major): the first row of each distinct row in hash
/// order, and each row's index among them; `None` when two different rows share a hash.
pub fn unique(values: &[i64], n: usize, width: usize) -> Option<(Vec<i64>, Vec<i64>)> {
    let row = |i: usize| &values[i * width..(i + 1) * width];
    // (hash, row) sorted: each distinct row's run of equal hashes starts at its first row.
    let mut keyed: Vec<(u64, usize)> = (0..n).map(|i| (row_hash(row(i)), i)).collect();
    keyed.sort_unstable();
    let mut first = Vec::new();
    let mut inverse = vec![0i64; n];
    let mut head = 0usize;
    for (k, &(h, i)) in keyed.iter().enumerate() {
        if k == 0 || h != keyed[k - 1].0 {
            head = i;
            first.push(i as i64);
        } else if row(head) != row(i) {
            return None;
        }
        inverse[i] = first.len() as i64 - 1;
    }
    Some((first, inverse))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_rows_come_in_hash_order_with_their_first_row() {
        let values = [1, 2, 3, 4, 1, 2, 5, 6, 3, 4];
        let (first, inverse) = unique(&values, 5, 2).unwrap();
        let mut by_hash = vec![(row_hash(&[1, 2]), 0), (row_hash(&[3, 4]), 1), (row_hash(&[5, 6]), 3)];
        by_hash.sort_unstable();
        assert_eq!(first, by_hash.iter().map(|&(_, i)| i).collect::<Vec<i64>>());
        let rank_of = |i: i64| first.iter().position(|&f| f == i).unwrap() as i64;
        assert_eq!(inverse, vec![rank_of(0), rank_of(1), rank_of(0), rank_of(3), rank_of(1)]);
    }

    #[test]
    fn rows_of_one_hash_that_differ_are_a_collision() {
        // After the first column the state is g(c); a second column b makes it g(c) ^ b before mixing,
        // so (0, 0) and (1, g(0) ^ g(1)) hash alike.
        let g = |c: i64| row_hash(&[c]);
        let values = [0, 0, 1, (g(0) ^ g(1)) as i64];
        assert_eq!(row_hash(&values[..2]), row_hash(&values[2..]));
        assert_eq!(unique(&values, 2, 2), None);
        assert!(unique(&[7, 7, 7], 3, 1).is_some());
    }

    #[test]
    fn no_rows_and_no_columns() {
        assert_eq!(unique(&[], 0, 3), Some((vec![], vec![])));
        assert_eq!(unique(&[], 3, 0), Some((vec![0], vec![0, 0, 0])));
    }
}
