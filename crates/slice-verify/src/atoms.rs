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

/// A set of atoms of one field.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    pub(crate) fn empty(len: usize) -> Bits {
        Bits(vec![0; len.div_ceil(64)])
    }

    pub(crate) fn full(len: usize) -> Bits {
        let mut bits = Bits::empty(len);
        for i in 0..len {
            bits.insert(i);
        }
        bits
    }

    pub(crate) fn insert(&mut self, i: usize) {
        if let Some(word) = self.0.get_mut(i / 64) {
            *word |= 1 << (i % 64);
        }
    }

    pub(crate) fn remove(&mut self, i: usize) {
        if let Some(word) = self.0.get_mut(i / 64) {
            *word &= !(1 << (i % 64));
        }
    }

    pub(crate) fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    pub(crate) fn and(&self, other: &Bits) -> Bits {
        Bits(self.0.iter().zip(&other.0).map(|(a, b)| a & b).collect())
    }

    pub(crate) fn minus(&self, other: &Bits) -> Bits {
        Bits(self.0.iter().zip(&other.0).map(|(a, b)| a & !b).collect())
    }

    pub(crate) fn intersects(&self, other: &Bits) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, word)| {
            (0..64)
                .filter(move |b| word & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

/// The atoms of one field.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldAtoms {
    /// One value per atom.
    pub witness: Vec<u128>,
    /// For each predicate (in the order given), the atoms that satisfy it.
    pub of_pred: HashMap<Pred, Bits>,
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
        let mut of_pred: HashMap<Pred, Bits> =
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
