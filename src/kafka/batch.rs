//! Reading a consumer's messages a batch at a time.
//!
//! rdkafka's `poll` hands out one message per call, each wrapped in an event, an `Arc` and a
//! clock read; for a scan of a million messages that is a third of the reading's CPU.
//! librdkafka's own `rd_kafka_consume_batch_queue` takes up to a batch's worth of messages
//! off the consumer queue under one lock, as confluent-kafka-python's `consume()` does. This
//! module is the only place that calls librdkafka directly; what it hands out borrows from
//! the batch, which releases each message once it has been handled (see [`Batch::drain`]),
//! and the rest when it is cleared or dropped.

use std::ffi::CStr;
use std::os::raw::c_void;
use std::ptr;
use std::time::Duration;

use rdkafka::bindings as rd;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::RDKafkaErrorCode;

/// The consumer's queue (where fetched messages arrive), held for batch reads.
pub struct ConsumerQueue<'c> {
    queue: ptr::NonNull<rd::rd_kafka_queue_t>,
    _consumer: std::marker::PhantomData<&'c BaseConsumer>,
}

impl<'c> ConsumerQueue<'c> {
    /// `None` when the consumer has no group id (librdkafka then has no consumer queue).
    pub fn of(consumer: &'c BaseConsumer) -> Option<ConsumerQueue<'c>> {
        // SAFETY: the client pointer is valid for the consumer's lifetime, which bounds 'c;
        // the queue reference returned is ours to destroy.
        let queue = unsafe { rd::rd_kafka_queue_get_consumer(consumer.client().native_ptr()) };
        ptr::NonNull::new(queue).map(|queue| ConsumerQueue {
            queue,
            _consumer: std::marker::PhantomData,
        })
    }

    /// Replaces `batch`'s messages with up to its capacity of new ones, waiting up to
    /// `timeout` for the first. Non-message events (logs, client errors) are served by
    /// librdkafka on the way.
    pub fn consume(&self, batch: &mut Batch, timeout: Duration) {
        batch.clear();
        // librdkafka's batch call waits until the batch is full or the timeout passes, so
        // it is only ever asked to wait for one message: what is queued is taken at once,
        // and the end of a range or a slow fetch costs no timeout.
        self.take(batch, Duration::ZERO, batch.messages.capacity());
        if batch.is_empty() {
            self.take(batch, timeout, 1);
            if !batch.is_empty() {
                self.take(batch, Duration::ZERO, batch.messages.capacity() - 1);
            }
        }
    }

    /// Appends up to `limit` messages to `batch`, waiting up to `timeout` for all of them.
    fn take(&self, batch: &mut Batch, timeout: Duration, limit: usize) {
        let held = batch.messages.len();
        let room = limit.min(batch.messages.capacity() - held);
        if room == 0 {
            return;
        }
        let timeout_ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: the array has room for `room` more pointers after the `held` ones;
        // librdkafka writes at most that many and returns how many (or -1 on error, taken
        // as none).
        let count = unsafe {
            rd::rd_kafka_consume_batch_queue(
                self.queue.as_ptr(),
                timeout_ms,
                batch.messages.as_mut_ptr().add(held),
                room,
            )
        };
        // SAFETY: the `count` entries after the held ones were written by librdkafka.
        unsafe { batch.messages.set_len(held + count.max(0) as usize) };
    }
}

impl Drop for ConsumerQueue<'_> {
    fn drop(&mut self) {
        // SAFETY: the reference came from rd_kafka_queue_get_consumer and is released once.
        unsafe { rd::rd_kafka_queue_destroy(self.queue.as_ptr()) };
    }
}

/// Up to a batch of messages owned by this program until cleared.
pub struct Batch {
    messages: Vec<*mut rd::rd_kafka_message_t>,
}

impl Batch {
    pub fn with_capacity(capacity: usize) -> Batch {
        Batch {
            messages: Vec::with_capacity(capacity.max(1)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Hands out the messages in order and releases each once its handler is done with it,
    /// instead of all at the end: the header lists librdkafka allocates when a message's
    /// headers are first read are then freed before the next message's are made, which the
    /// allocator's per-thread cache serves without going to its shared lists.
    pub fn drain(&mut self) -> Drain<'_> {
        Drain {
            batch: self,
            next: 0,
        }
    }

    pub fn clear(&mut self) {
        for message in self.messages.drain(..) {
            // SAFETY: each message came from rd_kafka_consume_batch_queue and is destroyed
            // exactly once (it leaves the list here).
            unsafe { rd::rd_kafka_message_destroy(message) };
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The messages of a [`Batch`], each released when its [`Released`] guard drops; those not
/// handed out are released with the batch when the drain ends early.
pub struct Drain<'b> {
    batch: &'b mut Batch,
    next: usize,
}

impl<'b> Drain<'b> {
    /// The next message, released when the returned guard drops.
    pub fn next_message(&mut self) -> Option<Released<'_>> {
        let message = *self.batch.messages.get(self.next)?;
        self.next += 1;
        Some(Released {
            message,
            _batch: std::marker::PhantomData,
        })
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        // The first `next` were released by their guards: only their pointers go here.
        // The rest are released with the batch.
        self.batch.messages.drain(..self.next);
        self.batch.clear();
    }
}

/// A message of a draining batch, destroyed when dropped.
pub struct Released<'d> {
    message: *mut rd::rd_kafka_message_t,
    _batch: std::marker::PhantomData<&'d mut Batch>,
}

impl Released<'_> {
    pub fn view(&self) -> Fetched<'_> {
        // SAFETY: the message is live until this guard drops, which bounds the view.
        Fetched {
            message: unsafe { &*self.message },
        }
    }
}

impl Drop for Released<'_> {
    fn drop(&mut self) {
        // SAFETY: the drain handed this message out once and no longer holds it.
        unsafe { rd::rd_kafka_message_destroy(self.message) };
    }
}

/// One message of a [`Batch`]: a read-only view of librdkafka's message.
pub struct Fetched<'b> {
    message: &'b rd::rd_kafka_message_t,
}

impl<'b> Fetched<'b> {
    pub fn partition(&self) -> i32 {
        self.message.partition
    }

    pub fn offset(&self) -> i64 {
        self.message.offset
    }

    /// `Some` for a consumer error delivered in place of a message (offset out of range,
    /// say); `None` for a message.
    pub fn error(&self) -> Option<(RDKafkaErrorCode, String)> {
        if self.message.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            return None;
        }
        // SAFETY: the message is live; librdkafka returns a NUL-terminated string it owns.
        let text = unsafe { CStr::from_ptr(rd::rd_kafka_message_errstr(self.message)) };
        Some((
            RDKafkaErrorCode::from(self.message.err),
            text.to_string_lossy().into_owned(),
        ))
    }

    pub fn key(&self) -> Option<&'b [u8]> {
        // SAFETY: key/key_len describe a buffer owned by the live message.
        unsafe { bytes(self.message.key, self.message.key_len) }
    }

    pub fn payload(&self) -> Option<&'b [u8]> {
        // SAFETY: payload/len describe a buffer owned by the live message.
        unsafe { bytes(self.message.payload, self.message.len) }
    }

    /// The message's timestamp in milliseconds since the epoch, when it has one.
    pub fn timestamp(&self) -> Option<i64> {
        let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        // SAFETY: the message is live; `kind` is written by librdkafka.
        let millis = unsafe { rd::rd_kafka_message_timestamp(self.message, &mut kind) };
        (kind != rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && millis >= 0)
            .then_some(millis)
    }

    /// The headers in order: name (lossy UTF-8) and value (`None` for a null value).
    pub fn headers(&self) -> Vec<(String, Option<&'b [u8]>)> {
        let mut headers = Vec::new();
        // SAFETY: the message's headers live as long as the message, which outlives 'b.
        unsafe {
            each_header(self.header_list(), |name, value| {
                headers.push((name.to_string_lossy().into_owned(), value));
            })
        };
        headers
    }

    /// The value of the last header called `name`, as Kafka's clients read a header given
    /// twice (`lastHeader`); `None` when there is none or that last value is null.
    pub fn header(&self, name: &str) -> Option<&'b [u8]> {
        // SAFETY: as in `headers`.
        unsafe { last_header_value(self.header_list(), name) }
    }

    /// The message's header list, null when it has none.
    fn header_list(&self) -> *const rd::rd_kafka_headers_t {
        let mut headers: *mut rd::rd_kafka_headers_t = ptr::null_mut();
        // SAFETY: the message is live (it parses its headers on first use and keeps them).
        // The message is only read; librdkafka's signature takes it as const.
        let found = unsafe { rd::rd_kafka_message_headers(self.message, &mut headers) };
        if found == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            headers
        } else {
            ptr::null()
        }
    }
}

/// The value of the last header of `headers` called `name`; `None` when there is none or
/// its value is null.
///
/// # Safety
/// `headers` is null or a live header list that outlives `'h`.
unsafe fn last_header_value<'h>(
    headers: *const rd::rd_kafka_headers_t,
    name: &str,
) -> Option<&'h [u8]> {
    let mut last = None;
    each_header(headers, |header, value| {
        if header.to_bytes() == name.as_bytes() {
            last = Some(value);
        }
    });
    last.flatten()
}

/// Calls `each` with every header of `headers`, in order.
///
/// # Safety
/// `headers` is null or a live header list that outlives `'h`; every name and value it
/// hands out is owned by the list.
unsafe fn each_header<'h>(
    headers: *const rd::rd_kafka_headers_t,
    mut each: impl FnMut(&CStr, Option<&'h [u8]>),
) {
    if headers.is_null() {
        return;
    }
    for index in 0..rd::rd_kafka_header_cnt(headers) {
        let mut name = ptr::null();
        let mut value: *const c_void = ptr::null();
        let mut size = 0usize;
        if rd::rd_kafka_header_get_all(headers, index, &mut name, &mut value, &mut size)
            != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR
            || name.is_null()
        {
            break;
        }
        each(CStr::from_ptr(name), bytes(value, size));
    }
}

/// A borrowed byte slice from librdkafka, `None` for a null pointer.
///
/// # Safety
/// `data` is null or points to `len` bytes that stay valid for `'a`.
unsafe fn bytes<'a>(data: *const c_void, len: usize) -> Option<&'a [u8]> {
    if data.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(data as *const u8, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::raw::c_char;

    /// A header list as librdkafka makes one for a message, freed on drop.
    struct HeaderList(*mut rd::rd_kafka_headers_t);

    impl HeaderList {
        fn of(headers: &[(&str, Option<&str>)]) -> HeaderList {
            // SAFETY: a fresh list, filled with copies of the names and values given.
            unsafe {
                let list = rd::rd_kafka_headers_new(headers.len());
                for (name, value) in headers {
                    let (data, size) = match value {
                        Some(value) => (value.as_ptr() as *const c_void, value.len() as isize),
                        None => (ptr::null(), 0),
                    };
                    let added = rd::rd_kafka_header_add(
                        list,
                        name.as_ptr() as *const c_char,
                        name.len() as isize,
                        data,
                        size,
                    );
                    assert_eq!(added, rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR);
                }
                HeaderList(list)
            }
        }

        fn last(&self, name: &str) -> Option<&[u8]> {
            // SAFETY: the list lives as long as `self`.
            unsafe { last_header_value(self.0, name) }
        }
    }

    impl Drop for HeaderList {
        fn drop(&mut self) {
            // SAFETY: made by rd_kafka_headers_new, freed once.
            unsafe { rd::rd_kafka_headers_destroy(self.0) };
        }
    }

    /// A header given twice is its last value, as Kafka's clients (`lastHeader`) and the exec
    /// handler's JSON line read it; the event id must be the same one.
    #[test]
    fn a_header_given_twice_is_its_last_value() {
        let list = HeaderList::of(&[
            ("event_id", Some("first-A")),
            ("trace", Some("t-1")),
            ("event_id", Some("last-B")),
        ]);
        assert_eq!(list.last("event_id"), Some(&b"last-B"[..]));
        assert_eq!(list.last("trace"), Some(&b"t-1"[..]));
        assert_eq!(list.last("missing"), None);
        // A null last value is no value, whatever came before it.
        let nulled = HeaderList::of(&[("event_id", Some("first-A")), ("event_id", None)]);
        assert_eq!(nulled.last("event_id"), None);
    }

    #[test]
    fn no_header_list_has_no_value() {
        // SAFETY: a null list is allowed.
        assert_eq!(unsafe { last_header_value(ptr::null(), "event_id") }, None);
    }
}
