//! State kept per CPU and looked up for every event of a capture.

use super::IntMap;

/// CPU numbers below this are slots of an array; any other goes to a hash map. 4096 is
/// perf's default `MAX_NR_CPUS` (tools/lib/perf/include/internal/cpumap.h), so a recording of
/// a real machine fits the array, and a damaged record's CPU number cannot make it large.
pub(crate) const DENSE: u32 = 4096;

/// A map keyed by CPU number. The passes over a whole capture (the gap limits, the rebuild of
/// holds, the coverage check) look up a CPU's state once or twice per event; on a 2 M-event
/// capture the array took the gap-limit pass from 28 to 20 ms. Lookups and inserts are those
/// of a map; there is no iteration in key order (see [`CpuMap::values`]).
#[derive(Debug, Clone)]
pub(crate) struct CpuMap<V> {
    dense: Vec<Option<V>>,
    rest: IntMap<u32, V>,
}

impl<V> Default for CpuMap<V> {
    fn default() -> Self {
        CpuMap {
            dense: Vec::new(),
            rest: IntMap::default(),
        }
    }
}

impl<V> CpuMap<V> {
    /// The CPU's value.
    pub(crate) fn get(&self, cpu: u32) -> Option<&V> {
        match cpu < DENSE {
            true => self.dense.get(cpu as usize).and_then(Option::as_ref),
            false => self.rest.get(&cpu),
        }
    }

    /// The CPU's value, to change.
    pub(crate) fn get_mut(&mut self, cpu: u32) -> Option<&mut V> {
        match cpu < DENSE {
            true => self.dense.get_mut(cpu as usize).and_then(Option::as_mut),
            false => self.rest.get_mut(&cpu),
        }
    }

    /// Sets the CPU's value; the one it replaces.
    pub(crate) fn insert(&mut self, cpu: u32, v: V) -> Option<V> {
        match cpu < DENSE {
            true => self.slot(cpu).replace(v),
            false => self.rest.insert(cpu, v),
        }
    }

    /// Takes the CPU's value out.
    pub(crate) fn remove(&mut self, cpu: u32) -> Option<V> {
        match cpu < DENSE {
            true => self.dense.get_mut(cpu as usize).and_then(Option::take),
            false => self.rest.remove(&cpu),
        }
    }

    /// The CPU's value, a default one put in first when it has none.
    pub(crate) fn or_default(&mut self, cpu: u32) -> &mut V
    where
        V: Default,
    {
        match cpu < DENSE {
            true => self.slot(cpu).get_or_insert_with(V::default),
            false => self.rest.entry(cpu).or_default(),
        }
    }

    /// Every value, in no order a caller may rely on.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.dense.iter().flatten().chain(self.rest.values())
    }

    fn slot(&mut self, cpu: u32) -> &mut Option<V> {
        let i = cpu as usize;
        if i >= self.dense.len() {
            self.dense.resize_with(i + 1, || None);
        }
        &mut self.dense[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Rng;

    /// Random inserts, lookups and defaults, on CPU numbers both sides of the array's end and
    /// at u32::MAX, agree with a hash map's.
    #[test]
    fn a_cpu_map_is_a_map() {
        let mut rng = Rng::new(5);
        let mut m: CpuMap<u64> = CpuMap::default();
        let mut h: IntMap<u32, u64> = IntMap::default();
        let cpus = [0, 1, 2, 63, DENSE - 1, DENSE, DENSE + 1, 100_000, u32::MAX];
        for i in 0..5000u64 {
            let cpu = cpus[rng.below(cpus.len())];
            match rng.below(5) {
                0 => assert_eq!(m.insert(cpu, i), h.insert(cpu, i), "insert {cpu}"),
                1 => {
                    *m.or_default(cpu) += i;
                    *h.entry(cpu).or_default() += i;
                }
                2 => {
                    if let (Some(a), Some(b)) = (m.get_mut(cpu), h.get_mut(&cpu)) {
                        *a ^= i;
                        *b ^= i;
                    }
                }
                3 => assert_eq!(m.remove(cpu), h.remove(&cpu), "remove {cpu}"),
                _ => assert_eq!(m.get(cpu), h.get(&cpu), "get {cpu}"),
            }
        }
        for &cpu in &cpus {
            assert_eq!(m.get(cpu), h.get(&cpu), "{cpu}");
        }
        let (mut a, mut b): (Vec<u64>, Vec<u64>) =
            (m.values().copied().collect(), h.values().copied().collect());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert!(m.dense.len() <= DENSE as usize);
    }
}
