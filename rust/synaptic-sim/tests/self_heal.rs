//! A buggy CPU1 that scribbles on a shared word, then reboots, finds the
//! link serving again: for every shared word of the region (control block,
//! every word of the ABI's own list included, so a word added to the ABI
//! later is covered; both rings' indices, the service-time table, every
//! exchange header) and
//! several values, one CPU1 life serves an inference, writes the word and
//! dies; the next life attaches (retrying while CPU0's maintenance restores
//! the control block) and must get a correct inference within a bounded
//! number of attempts. A scribbled index may cost the message in flight on
//! its ring (a resynchronised consumer drops what it cannot trust), never
//! the link.
//!
//! The simulated CPU1 answers park requests from its doorbell as the
//! firmware's interrupt does ([`synaptic_serve::park::ParkHold`]), so a
//! scribbled `park_request` that a rebooted CPU1 held for without end
//! (ABI v4's first implementation) fails here.

use synaptic_abi::Priority;
use synaptic_ipc::Timeout;
use synaptic_sim::{run, Cpu0Config, KWS, RING};

/// Attempts the next life may need (a lookup or an inference lost to a
/// resynchronisation, then the one that works).
const ATTEMPTS: u32 = 4;
const SHORT: Timeout = Timeout::Millis(100);
const LONG: Timeout = Timeout::Millis(10_000);

#[test]
fn every_shared_word_scribbled_by_a_rebooting_cpu1_is_healed() {
    let (worst, cpu0) = run(Cpu0Config::default(), |sim| {
        let region = sim.region();
        let words: Vec<usize> = region.shared_words().collect();
        assert_eq!(words.len(), 16 + 4 + 32 + 16 * region.slot_count());
        for word in synaptic_abi::CONTROL_WORDS {
            assert!(words.contains(&word.offset), "{} is scribbled", word.name);
        }
        let mut worst = 0;
        let mut seq = 0;
        for &offset in &words {
            let word = region.shared_word(offset).expect("a shared word");
            // As a function of what the word held: zero, all ones, one up,
            // the top bit, and a ring's length either way (an index that
            // makes the ring look full or impossibly ahead to its peer).
            let n = RING as u32;
            let scribbles: [fn(u32, u32) -> u32; 6] = [
                |_, _| 0,
                |_, _| u32::MAX,
                |v, _| v.wrapping_add(1),
                |v, _| v ^ 0x8000_0000,
                |v, n| v.wrapping_sub(n),
                |v, n| v.wrapping_add(n),
            ];
            for (kind, scribble) in scribbles.iter().enumerate() {
                // A life that works, then scribbles and dies.
                sim.cpu1(|cpu1| {
                    let kws = cpu1.lookup(&KWS, LONG).expect("lookup before the scribble");
                    seq += 1;
                    let r = cpu1.infer(&KWS, kws, seq, Priority::Normal, LONG);
                    assert_eq!(r.map(|c| c.correct), Ok(true), "word {offset:#x}");
                    let original = word.load(std::sync::atomic::Ordering::SeqCst);
                    word.store(scribble(original, n), std::sync::atomic::Ordering::SeqCst);
                });
                // The next life: attach, then serve within a few attempts.
                let (attempts, _) = sim.cpu1(|cpu1| {
                    for attempt in 1..=ATTEMPTS {
                        let Ok(kws) = cpu1.lookup(&KWS, SHORT) else {
                            continue;
                        };
                        seq += 1;
                        if let Ok(c) = cpu1.infer(&KWS, kws, seq, Priority::Normal, SHORT) {
                            assert!(c.correct, "word {offset:#x}: a wrong output");
                            return attempt;
                        }
                    }
                    panic!("word {offset:#x}, scribble {kind}: no correct inference in {ATTEMPTS} attempts");
                });
                worst = worst.max(attempts);
            }
        }
        worst
    });
    println!(
        "self-heal: worst case {worst} attempt(s); CPU0 repaired {} words, resynchronised {} times",
        cpu0.intake.repairs + cpu0.stats.repairs,
        cpu0.intake.corrupt
    );
    assert!(cpu0.intake.repairs > 0, "CPU0 rewrote the words it owns");
}
