//! Which events a policy's replay needs, and how to record them at low overhead.
//!
//! The replay rebuilds every `lru_lock` hold from the mm events around it (docs/MODELS.md §2):
//! `pagemap:mm_lru_insertion` and `kmem:mm_page_alloc` give the folios a drain moves,
//! `kmem:mm_page_free` the free-side holds, `lock:contention_begin/end` the waits the
//! calibration places. Call chains stretch every hold several-fold (a `-g` recording of the
//! seed benchmark replays to a fifth of its measured contention), so they are taken only
//! where a policy cannot do without them, and then not on the per-folio events.

/// One `perf record -e` event and whether it takes a call chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// `subsystem:name`.
    pub name: &'static str,
    /// Record a call chain with it (`-g`); the others get `/call-graph=no/`.
    pub chain: bool,
}

/// A recording recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    /// Short name, as in the meta file.
    pub name: &'static str,
    /// What it records.
    pub events: Vec<Event>,
}

/// The lock events alone: the observer-effect yardstick.
pub const LOCK_ONLY: [&str; 2] = ["lock:contention_begin", "lock:contention_end"];

/// The recipe for `policy` (a name from the what-if registry), from the `needs` its registry
/// row declares (`whatif::checks`), so what is recorded and what is checked are one list: the
/// first event of each need, optional ones too. Where the policy wants call chains (the fbatch
/// policies: drain sites), the lock and syscall events take them and the per-folio mm events
/// (`pagemap:*`, `kmem:*`) do not: they fire once per folio inside the hold, and a stack walk
/// per folio stretches every hold several-fold. Work policies read a directory of their own
/// making (fixtures/capture-lazyfree.sh) and are refused here.
pub fn for_policy(policy: &str) -> Result<Recipe, String> {
    let info = crate::whatif::registry::find(policy).map_err(|e| e.to_string())?;
    let Some(needs) = info.needs else {
        return Err(format!(
            "{policy} reads a capture directory of its own (samples, reclaim stats, khugepaged scans): \
             make it with fixtures/capture-lazyfree.sh"
        ));
    };
    let chains = needs.call_chains.is_some();
    let events = needs
        .events
        .iter()
        .filter_map(|n| n.any_of.first().copied())
        .map(|name| Event {
            name,
            chain: chains && !(name.starts_with("pagemap:") || name.starts_with("kmem:")),
        })
        .collect();
    Ok(Recipe {
        name: if chains { "chains" } else { "replay" },
        events,
    })
}

impl Recipe {
    /// The recipe minus `drop` (each must be one of its events).
    pub fn without(mut self, drop: &[String]) -> Result<Recipe, String> {
        for d in drop {
            if !self.events.iter().any(|e| e.name == d) {
                let have: Vec<&str> = self.events.iter().map(|e| e.name).collect();
                return Err(format!(
                    "--without {d}: not an event of the {} recipe ({})",
                    self.name,
                    have.join(" ")
                ));
            }
        }
        self.events.retain(|e| !drop.iter().any(|d| d == e.name));
        Ok(self)
    }

    /// Does any event take a call chain?
    pub fn chains(&self) -> bool {
        self.events.iter().any(|e| e.chain)
    }

    /// The `perf record` event options: `-e NAME` each, `-g` once when some take a chain, and
    /// `/call-graph=no/` on the ones that do not.
    pub fn perf_args(&self) -> Vec<String> {
        let g = self.chains();
        let mut v = Vec::new();
        if g {
            v.push("-g".to_string());
        }
        for e in &self.events {
            v.push("-e".to_string());
            v.push(if g && !e.chain {
                format!("{}/call-graph=no/", e.name)
            } else {
                e.name.to_string()
            });
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_recipe_has_no_call_chains() {
        let r = for_policy("lru-cache").unwrap();
        assert!(!r.chains());
        assert_eq!(
            r.perf_args().join(" "),
            "-e lock:contention_begin -e lock:contention_end -e pagemap:mm_lru_insertion \
             -e kmem:mm_page_alloc -e kmem:mm_page_free -e syscalls:sys_enter_madvise \
             -e syscalls:sys_exit_madvise"
        );
    }

    #[test]
    fn fbatch_recipe_chains_only_lock_and_madvise() {
        let a = for_policy("fbatch-drain").unwrap().perf_args().join(" ");
        assert!(a.starts_with("-g -e lock:contention_begin "), "{a}");
        assert!(a.contains("-e kmem:mm_page_free/call-graph=no/"), "{a}");
        assert!(a.contains("-e syscalls:sys_exit_madvise"), "{a}");
        assert!(!a.contains("madvise/call-graph=no"), "{a}");
        assert!(
            a.contains("-e pagemap:mm_lru_insertion/call-graph=no/"),
            "{a}"
        );
    }

    #[test]
    fn without_drops_one_event_and_refuses_others() {
        let r = for_policy("baseline").unwrap();
        let w = r
            .clone()
            .without(&["kmem:mm_page_free".to_string()])
            .unwrap();
        assert_eq!(w.events.len(), 6);
        assert!(!w.perf_args().join(" ").contains("mm_page_free"));
        assert!(r.without(&["sched:sched_switch".to_string()]).is_err());
    }

    #[test]
    fn work_policies_are_refused_with_the_script_to_use() {
        let e = for_policy("lazyfree-thp").unwrap_err();
        assert!(e.contains("capture-lazyfree.sh"), "{e}");
        assert!(for_policy("nope").is_err());
    }
}
