//! The engine's thread (persy's, `cowkv`'s): one per open of the
//! database, serving one run's session of the layer, to which the adapter
//! hands each call and waits for its answer (a rendezvous: never two
//! threads running at once, so a seed's run stays one sequence of calls).
//!
//! Why a thread of its own, when the kit's thread could call the engine
//! directly: what a process draws fresh from the operating system, a
//! thread keeps. std seeds each thread's `HashMap` keys from `getrandom`
//! once and then counts them on; `rand`'s `ThreadRng` (persy's
//! `rand::random`) seeds itself from `getrandom` once per thread. The
//! kit's worker threads run seed after seed, so on them a seed's bytes
//! would depend on the seeds run before it. A fresh thread whose session
//! serves `getrandom` from the seed ([`crate::entropy`]) starts both from
//! the seed at every open.
//!
//! Every call runs under `catch_unwind` on the engine's thread; a panic is
//! carried back, with the place it was raised (`carry_panic_place`), and
//! raised again on the caller's, where the kit catches it. What the layer refused during a call comes back with its answer
//! ([`Served::refusals`]), and so does a livelock the layer declared
//! ([`Served::livelock`], `crate::interpose`); what it refused while the
//! engine's handles were dropped, with the panic of that drop, is raised
//! by [`Drop`].

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use simkit::vfs::Vfs;
use simkit::{carry_panic_place, EnvironmentRefused};

use crate::plant::LayerPlant;
use crate::session::{self, SessionGuard};

type Job<S> = Box<dyn FnOnce(&mut S, &SessionGuard) + Send>;
type Panic = Box<dyn Any + Send>;

/// Where the session is opened and how its randomness is seeded.
pub struct Place {
    pub vfs: Arc<dyn Vfs>,
    /// The disk's directory of the database (the kit's `Env::dir`).
    pub dir: PathBuf,
    pub entropy_seed: u64,
    /// The mistake planted in the layer for this session, if any.
    pub plant: Option<LayerPlant>,
}

impl Place {
    /// The default place for an open of the kit's `env`: its disk and
    /// directory, randomness seeded alike at every open (0), no plant.
    /// (A target that draws randomness, or plants the layer's mistakes,
    /// sets `entropy_seed` or `plant`: `Place { plant: env.plant, ..Place::of(env) }`.)
    pub fn of<A: simkit::Adapter>(env: &simkit::Env<'_, A>) -> Place {
        Place { vfs: env.vfs.clone(), dir: env.dir.to_path_buf(), entropy_seed: 0, plant: None }
    }
}

/// A call's answer, what the layer refused while serving it, and the
/// livelock it took the engine for, if it did.
pub struct Served<R> {
    pub value: R,
    pub refusals: Vec<String>,
    pub livelock: Option<String>,
}

impl<R> Served<R> {
    fn of(value: R, guard: &SessionGuard) -> Served<R> {
        Served { value, refusals: guard.refusals(), livelock: guard.livelock() }
    }

    /// The answer, after failing the run if the layer refused anything
    /// the engine asked for (check `refused`) or took the engine for one
    /// that loops forever (a panic: the engine's, not the layer's; the
    /// answer is then only what the layer's failed calls made of it).
    pub fn unless_refused(self) -> R {
        raise_refusals(self.refusals);
        if let Some(livelock) = self.livelock {
            panic!("livelock: the engine never returned ({livelock}); the layer failed its later calls to end it");
        }
        self.value
    }
}

/// Fail the run with check `refused` when there are refusals.
pub fn raise_refusals(refusals: Vec<String>) {
    if !refusals.is_empty() {
        std::panic::panic_any(EnvironmentRefused { what: refusals.join("; ") });
    }
}

/// How the engine's thread ended: what the layer refused and a panic of
/// the state's drop (`Ok`), or that it hung for good (`Err`, a panic
/// payload saying so).
type Ended = Result<(Vec<String>, Option<Panic>), Panic>;

/// The engine's thread, holding its state `S` (built there, never sent).
pub struct Worker<S> {
    jobs: Option<mpsc::Sender<Job<S>>>,
    thread: Option<thread::JoinHandle<()>>,
    /// The thread's last word ([`Ended`]).
    ended: mpsc::Receiver<Ended>,
    /// Set when the thread hung for good ([`session::hang`]): it is never
    /// joined then.
    hung: Arc<AtomicBool>,
}

/// Tell `answer`'s waiter, should the engine's thread hang for good, that
/// it did: the waiter raises it as the engine's panic (`livelock: …`).
fn hang_hook<T: Send + 'static>(hung: &Arc<AtomicBool>, answer: &mpsc::SyncSender<Result<T, Panic>>) {
    let (hung, answer) = (Arc::clone(hung), answer.clone());
    session::on_hang(Box::new(move |message| {
        hung.store(true, Ordering::SeqCst);
        let _ = answer.send(Err(Box::new(message)));
    }));
}

impl<S: 'static> Worker<S> {
    /// Start a thread serving a session over `place`, and build the state
    /// there with `setup`: the worker, or `setup`'s error; either with
    /// what the layer refused meanwhile.
    pub fn start<E: Send + 'static>(
        place: Place,
        setup: impl FnOnce() -> Result<S, E> + Send + 'static,
    ) -> Served<Result<Worker<S>, E>> {
        let (jobs, inbox) = mpsc::channel::<Job<S>>();
        let (ready, started) = mpsc::sync_channel::<Result<Served<Result<(), E>>, Panic>>(1);
        let (last_word, ended) = mpsc::sync_channel::<Ended>(1);
        let hung = Arc::new(AtomicBool::new(false));
        let on_hang = Arc::clone(&hung);
        let thread = thread::spawn(move || {
            if place.plant != Some(LayerPlant::FastrandUnseeded) {
                crate::thread_seed::seed_thread(place.entropy_seed, 0);
            }
            let guard = crate::install(place.vfs, &[place.dir.as_path()], place.entropy_seed, place.plant);
            hang_hook(&on_hang, &ready);
            crate::interpose::start_engine_call();
            let built = crate::sched::engine_code(|| catch_unwind(AssertUnwindSafe(setup)));
            let (mut state, answer) = match built {
                Ok(Ok(state)) => (Some(state), Ok(Served::of(Ok(()), &guard))),
                Ok(Err(e)) => (None, Ok(Served::of(Err(e), &guard))),
                Err(panic) => (None, Err(carry_panic_place(panic))),
            };
            let _ = ready.send(answer);
            if let Some(state) = state.as_mut() {
                while let Ok(job) = inbox.recv() {
                    job(state, &guard);
                }
            }
            hang_hook(&on_hang, &last_word);
            crate::interpose::start_engine_call();
            let dropped = crate::sched::engine_code(|| catch_unwind(AssertUnwindSafe(move || drop(state))));
            crate::sched::engine_gone();
            let dropped = dropped.err().map(carry_panic_place);
            let _ = last_word.send(Ok((guard.refusals(), dropped)));
        });
        let mut worker = Worker { jobs: Some(jobs), thread: Some(thread), ended, hung };
        match started.recv().expect("the engine's thread answers its setup") {
            Ok(Served { value: Ok(()), refusals, livelock }) => Served { value: Ok(worker), refusals, livelock },
            Ok(Served { value: Err(e), refusals, livelock }) => {
                let (more, _) = worker.end();
                Served { value: Err(e), refusals: refusals.into_iter().chain(more).collect(), livelock }
            }
            Err(panic) => resume_unwind(panic),
        }
    }

    /// Run `job` on the engine's thread and wait for its answer.
    pub fn call<R: Send + 'static>(&self, job: impl FnOnce(&mut S) -> R + Send + 'static) -> Served<R> {
        let (reply, answer) = mpsc::sync_channel::<Result<Served<R>, Panic>>(1);
        let hung = Arc::clone(&self.hung);
        let run: Job<S> = Box::new(move |state, guard| {
            hang_hook(&hung, &reply);
            crate::interpose::start_engine_call();
            let value = crate::sched::engine_code(|| catch_unwind(AssertUnwindSafe(|| job(state))));
            let value = value.map_err(carry_panic_place);
            let _ = reply.send(value.map(|value| Served::of(value, guard)));
        });
        self.jobs.as_ref().expect("open until dropped").send(run).expect("the engine's thread serves until dropped");
        match answer.recv().expect("the engine's thread answers every call") {
            Ok(served) => served,
            Err(panic) => resume_unwind(panic),
        }
    }
}

impl<S> Worker<S> {
    /// End the thread: close its inbox, so it drops the state and ends,
    /// and wait for its last word (a thread that hung for good is left
    /// parked, never joined). What the layer refused, and a panic of the
    /// drop or the hang.
    fn end(&mut self) -> (Vec<String>, Option<Panic>) {
        self.jobs = None;
        let Some(thread) = self.thread.take() else { return (Vec::new(), None) };
        if self.hung.load(Ordering::SeqCst) {
            return (Vec::new(), None);
        }
        match self.ended.recv() {
            Ok(Ok(ended)) => {
                let _ = thread.join();
                ended
            }
            Ok(Err(hung)) => (Vec::new(), Some(hung)),
            Err(_) => (Vec::new(), thread.join().err()),
        }
    }
}

/// Drop the engine's state on its thread (its files closed there, in its
/// session), wait for the thread, and raise a panic of that drop (or of
/// its hang), or a refusal, unless this drop is part of an unwind already.
impl<S> Drop for Worker<S> {
    fn drop(&mut self) {
        let (refusals, panic) = self.end();
        if thread::panicking() {
            return;
        }
        if let Some(panic) = panic {
            resume_unwind(panic);
        }
        raise_refusals(refusals);
    }
}
