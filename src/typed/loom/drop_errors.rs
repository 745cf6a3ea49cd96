//! The drop-error handler (`set_drop_error_handler`, `report_drop_error`): the process-wide
//! handler installed, replaced and put back on one thread while other threads report. The
//! library's own functions on its own (per-execution) static. Not modelled: the `log`
//! feature's path and stderr (the handlers here only count).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::check;
use crate::typed::error::Error;
use crate::typed::handle::{DropErrorHandler, report_drop_error, set_drop_error_handler};

loom::lazy_static! {
    static ref BASE: AtomicUsize = AtomicUsize::new(0);
    static ref INSTALLED: AtomicUsize = AtomicUsize::new(0);
}

fn base(_: &'static str, _: &Error) {
    BASE.fetch_add(1, SeqCst);
}

fn installed(_: &'static str, _: &Error) {
    INSTALLED.fetch_add(1, SeqCst);
}

fn report() {
    report_drop_error("a handle", Err(Error::InvalidArgument("dropped")));
}

fn same(a: DropErrorHandler, b: DropErrorHandler) -> bool {
    std::ptr::fn_addr_eq(a, b)
}

/// One thread installs a handler and puts the previous one back while two threads report:
/// every report reaches exactly one of the two handlers, none is lost; each install returns
/// the handler it replaced (no update lost), and the one put back is in place at the end.
#[test]
fn a_handler_installed_and_removed_while_others_report_loses_nothing() {
    check(4, || {
        set_drop_error_handler(base);
        let reporters: Vec<_> = (0..2).map(|_| thread::spawn(report)).collect();
        let previous = set_drop_error_handler(installed);
        assert!(same(previous, base));
        let replaced = set_drop_error_handler(previous);
        assert!(same(replaced, installed), "an install was lost");
        for reporter in reporters {
            reporter.join().unwrap_or_else(|_| panic!("reporter"));
        }
        assert_eq!(BASE.load(SeqCst) + INSTALLED.load(SeqCst), 2);
        assert!(same(set_drop_error_handler(base), base));
    });
}

/// A report that begins after an install has returned (a flag the installer sets
/// afterwards, read first) reaches the installed handler.
#[test]
fn a_report_after_an_install_reaches_the_installed_handler() {
    check(4, || {
        set_drop_error_handler(base);
        let done = Arc::new(AtomicBool::new(false));
        let installer = {
            let done = Arc::clone(&done);
            thread::spawn(move || {
                set_drop_error_handler(installed);
                done.store(true, SeqCst);
            })
        };
        if done.load(SeqCst) {
            report();
            assert_eq!(INSTALLED.load(SeqCst), 1);
        } else {
            report();
            assert_eq!(BASE.load(SeqCst) + INSTALLED.load(SeqCst), 1);
        }
        installer.join().unwrap_or_else(|_| panic!("installer"));
    });
}
