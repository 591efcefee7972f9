//! Atoms: for one header field, the cells of every (value, mask) predicate the tables
//! use on it. Two values in one atom satisfy exactly the same predicates, so every
//! entry treats them alike and one witness value traces the whole atom exactly.
//!
//! The atoms are found by splitting the value space bit by bit, highest first, only on
//! bits some still-possible predicate looks at: a branch ends once no predicate alive
//! on it cares about a lower bit, and its signature (the predicates alive) names its
//! atom. For exact values and prefixes, the usual shapes, that is linear in the
//! predicates times the width; a node budget stops pathological masks.

use std::collections::HashMap;

use crate::parse::Pred;
use rustc_hash::FxHashMap as FastMap;

/// Words a set of atoms holds in place, without an allocation: 256 atoms, what a field
/// of a network with a couple of hundred hosts splits into. Cubes are copied at every
/// hop and every split of a trace.
const INLINE_WORDS: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Words {
    /// The words in use, then zeros.
    Inline(u8, [u64; INLINE_WORDS]),
    Heap(Vec<u64>),
}

/// A set of atoms of one field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Bits(Words);

impl Default for Bits {
    fn default() -> Bits {
        Bits::empty(0)
    }
}

impl Bits {
    pub(crate) fn empty(len: usize) -> Bits {
        let words = len.div_ceil(64);
        match u8::try_from(words) {
            Ok(n) if words <= INLINE_WORDS => Bits(Words::Inline(n, [0; INLINE_WORDS])),
            _ => Bits(Words::Heap(vec![0; words])),
        }
    }

    fn words(&self) -> &[u64] {
        match &self.0 {
            Words::Inline(n, words) => words.get(..usize::from(*n)).unwrap_or(words),
            Words::Heap(words) => words,
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.0 {
            // `n` never exceeds the array (see `empty`).
            Words::Inline(n, words) => &mut words[..usize::from(*n).min(INLINE_WORDS)],
            Words::Heap(words) => words,
        }
    }

    /// The same length as `self`, each word `f` of the two (a word `other` lacks is 0).
    fn zip(&self, other: &Bits, f: impl Fn(u64, u64) -> u64) -> Bits {
        let mut out = self.clone();
        let theirs = other.words();
        for (i, a) in out.words_mut().iter_mut().enumerate() {
            *a = f(*a, theirs.get(i).copied().unwrap_or(0));
        }
        out
    }

    pub(crate) fn full(len: usize) -> Bits {
        let mut bits = Bits::empty(len);
        for i in 0..len {
            bits.insert(i);
        }
        bits
    }

    pub(crate) fn insert(&mut self, i: usize) {
        if let Some(word) = self.words_mut().get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }

    pub(crate) fn remove(&mut self, i: usize) {
        if let Some(word) = self.words_mut().get_mut(i / 64) {
            *word &= !(1 << (i % 64));
        }
    }

    pub(crate) fn contains(&self, i: usize) -> bool {
        self.words()
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.words().iter().all(|w| *w == 0)
    }

    pub(crate) fn and(&self, other: &Bits) -> Bits {
        self.zip(other, |a, b| a & b)
    }

    pub(crate) fn minus(&self, other: &Bits) -> Bits {
        self.zip(other, |a, b| a & !b)
    }

    pub(crate) fn intersects(&self, other: &Bits) -> bool {
        self.words()
            .iter()
            .zip(other.words())
            .any(|(a, b)| a & b != 0)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words().iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(w * 64 + bit)
            })
        })
    }

    pub(crate) fn union_with(&mut self, other: &Bits) {
        for (a, b) in self.words_mut().iter_mut().zip(other.words()) {
            *a |= b;
        }
    }

    /// How many atoms it holds.
    pub(crate) fn count(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// The atoms of one field.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldAtoms {
    /// One value per atom.
    pub witness: Vec<u128>,
    /// For each predicate (in the order given), the atoms that satisfy it.
    pub of_pred: FastMap<Pred, Bits>,
    preds: Vec<Pred>,
    width: u32,
}

/// More nodes than this and the field's masks are pathological: the verifier says so
/// rather than run for ever.
pub(crate) const NODE_BUDGET: usize = 2_000_000;

impl FieldAtoms {
    /// The atoms of a field of `width` bits under `preds` (distinct, normalised).
    pub(crate) fn build(width: u32, preds: &[Pred]) -> Result<FieldAtoms, String> {
        let mut signatures: HashMap<Vec<u32>, usize> = HashMap::new();
        let mut witness = Vec::new();
        let mut nodes = 0usize;
        let all: Vec<u32> = (0..preds.len())
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        // Depth-first with an explicit stack: (highest undecided bit + 1, prefix, alive).
        let mut stack = vec![(width, 0u128, all)];
        while let Some((above, prefix, alive)) = stack.pop() {
            nodes += 1;
            if nodes > NODE_BUDGET {
                return Err(format!(
                    "over {NODE_BUDGET} cells splitting a field of {width} bits by {} masks",
                    preds.len()
                ));
            }
            let below = crate::parse::ones(above);
            let care = alive
                .iter()
                .filter_map(|&p| preds.get(p as usize))
                .fold(0u128, |acc, pred| acc | (pred.mask & below));
            if care == 0 {
                let next = witness.len();
                signatures.entry(alive).or_insert_with(|| {
                    witness.push(prefix);
                    next
                });
                continue;
            }
            let bit = 127 - care.leading_zeros();
            for v in [1u128, 0] {
                let keep: Vec<u32> = alive
                    .iter()
                    .copied()
                    .filter(|&p| {
                        preds.get(p as usize).is_some_and(|pred| {
                            pred.mask >> bit & 1 == 0 || pred.value >> bit & 1 == v
                        })
                    })
                    .collect();
                stack.push((bit, prefix | (v << bit), keep));
            }
        }
        let len = witness.len();
        let mut of_pred: FastMap<Pred, Bits> =
            preds.iter().map(|p| (*p, Bits::empty(len))).collect();
        for (signature, atom) in &signatures {
            for &p in signature {
                if let Some(bits) = preds.get(p as usize).and_then(|pred| of_pred.get_mut(pred)) {
                    bits.insert(*atom);
                }
            }
        }
        Ok(FieldAtoms {
            witness,
            of_pred,
            preds: preds.to_vec(),
            width,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.witness.len()
    }

    /// The atom `value` falls in.
    pub(crate) fn atom_of(&self, value: u128) -> Option<usize> {
        // A value some table matches exactly: its predicate holds in its atom alone.
        if let Some(bits) = self.of_pred.get(&Pred::exact(value, self.width)) {
            return bits.iter().next();
        }
        let mut atoms = Bits::full(self.len());
        for pred in &self.preds {
            let bits = self.of_pred.get(pred)?;
            atoms = if pred.holds(value) {
                atoms.and(bits)
            } else {
                atoms.minus(bits)
            };
        }
        let first = atoms.iter().next();
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values_and_a_group_bit_make_their_cells() {
        let group = Pred::new(1 << 40, 1 << 40);
        let a = Pred::exact(2, 48);
        let b = Pred::exact(0xffff_ffff_ffff, 48);
        let atoms = FieldAtoms::build(48, &[group, a, b]).expect("atoms");
        // {a}, {b}, group-but-not-b, neither.
        assert_eq!(atoms.len(), 4);
        for value in [2u128, 0xffff_ffff_ffff, 1 << 40, 7] {
            let atom = atoms.atom_of(value).expect("atom");
            for pred in [group, a, b] {
                assert_eq!(atoms.of_pred[&pred].contains(atom), pred.holds(value));
            }
            let witness = atoms.witness[atom];
            assert_eq!(atoms.atom_of(witness), Some(atom));
        }
    }
}
