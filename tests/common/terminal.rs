//! The binary run on a pseudo-terminal, as an operator runs it: stdin, stdout and stderr on
//! the terminal, which is also its controlling terminal (where dialoguer reads a key from).

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Terminal {
    input: std::fs::File,
    screen: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    child: Child,
}

impl Terminal {
    /// Starts `command` on a new terminal of 24 rows by 100 columns.
    pub fn spawn(mut command: Command) -> Terminal {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 24,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two new descriptors, which are owned from here on.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        // SAFETY: fcntl on a descriptor this function owns.
        unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(&master),
                libc::F_SETFD,
                libc::FD_CLOEXEC,
            )
        };
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        // The parent's copies of the terminal's side go with the command, so that reading
        // ends when the child's last copy closes.
        drop(command);
        let mut output = std::fs::File::from(master);
        let input = output.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let shown = Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut buffer = [0; 4096];
            // Linux says EIO once no process has the terminal open any more.
            while let Ok(read @ 1..) = output.read(&mut buffer) {
                shown.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        Terminal {
            input,
            screen,
            reader: Some(reader),
            child,
        }
    }

    /// Everything written to the terminal so far, escape sequences included.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits up to 60 s for `text` to appear on the terminal.
    #[track_caller]
    pub fn expect(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.screen().contains(text) {
            assert!(
                Instant::now() < deadline,
                "{text:?} never appeared; the terminal shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the command has ended.
    pub fn ended(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        self.input.write_all(keys.as_bytes()).unwrap();
    }

    /// Waits for the command to end: its exit code (128 + the signal for one that killed
    /// it), all it wrote, and whether it left the terminal in its usual (canonical, echoing)
    /// mode.
    #[track_caller]
    pub fn wait(mut self) -> (i32, String, bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "still running after 60 s; the terminal shows:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut mode = std::mem::MaybeUninit::<libc::termios>::uninit();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.input);
        // SAFETY: tcgetattr fills `mode` when it returns 0.
        assert_eq!(unsafe { libc::tcgetattr(fd, mode.as_mut_ptr()) }, 0);
        let usual = libc::ICANON | libc::ECHO | libc::ISIG;
        let cooked = unsafe { mode.assume_init() }.c_lflag & usual == usual;
        self.reader.take().unwrap().join().unwrap();
        let code = status.code().unwrap_or_else(|| {
            128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
        });
        (code, self.screen(), cooked)
    }
}
