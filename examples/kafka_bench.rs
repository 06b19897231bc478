//! Helper for bench/compare.sh: fills a topic, commits a group's offsets, and reads a topic
//! the plainest way librdkafka allows (counting messages), to compare `inboxctl compare --scan`
//! against.
//!
//! kafka_bench produce BROKERS TOPIC PARTITIONS MESSAGES
//! kafka_bench commit-end BROKERS TOPIC GROUP
//! kafka_bench count BROKERS TOPIC          (rdkafka's poll, one message per call)
//! kafka_bench count-batch BROKERS TOPIC    (librdkafka's batch call, as inboxctl reads)

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(30);

fn config(brokers: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", brokers);
    // KAFKA_BENCH_PROPERTIES="key=value,key=value": librdkafka settings to compare with.
    if let Ok(properties) = std::env::var("KAFKA_BENCH_PROPERTIES") {
        for property in properties.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = property.split_once('=').expect("key=value");
            config.set(key, value);
        }
    }
    config
}

fn partitions(brokers: &str, topic: &str) -> Vec<(i32, i64, i64)> {
    let client: BaseConsumer = config(brokers)
        .set("group.id", "kafka-bench")
        .create()
        .unwrap();
    let metadata = client.fetch_metadata(Some(topic), TIMEOUT).unwrap();
    let ids: Vec<i32> = metadata.topics()[0]
        .partitions()
        .iter()
        .map(|p| p.id())
        .collect();
    let ranges = ids
        .into_iter()
        .map(|p| {
            let (low, high) = client.fetch_watermarks(topic, p, TIMEOUT).unwrap();
            (p, low, high)
        })
        .collect();
    close_promptly(&client);
    ranges
}

/// Closes the consumer polling every millisecond, as inboxctl's clients do: rdkafka's drop
/// polls in steps of 100 ms, which would add most of 0.1 s to the raw read's process.
fn close_promptly(consumer: &BaseConsumer) {
    if consumer.close_queue().is_ok() {
        while !consumer.closed() {
            consumer.poll(Duration::from_millis(1));
        }
    }
}

/// A consumer assigned every partition of `topic` from its log start, and how many
/// messages there are to the log end. Its read starts with the first poll.
fn assigned(brokers: &str, topic: &str) -> (BaseConsumer, i64) {
    let consumer: BaseConsumer = config(brokers)
        .set("group.id", "kafka-bench-count")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    let mut total = 0;
    for (p, low, high) in partitions(brokers, topic) {
        list.add_partition_offset(topic, p, Offset::Offset(low))
            .unwrap();
        total += high - low;
    }
    consumer.assign(&list).unwrap();
    (consumer, total)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["produce", brokers, topic, count, messages] => {
            let count: i32 = count.parse().unwrap();
            let messages: u64 = messages.parse().unwrap();
            let admin: AdminClient<DefaultClientContext> = config(brokers).create().unwrap();
            let created = admin
                .create_topics(
                    &[NewTopic::new(topic, count, TopicReplication::Fixed(1))],
                    &AdminOptions::new(),
                )
                .await
                .unwrap();
            created[0].as_ref().expect("create topic");
            let producer: BaseProducer = config(brokers)
                .set("linger.ms", "20")
                .set("batch.num.messages", "10000")
                .set("queue.buffering.max.messages", "1000000")
                .set("compression.type", "none")
                .create()
                .unwrap();
            let started = Instant::now();
            for n in 0..messages {
                let id = format!("evt-{n}");
                let body = format!(r#"{{"event_id":"{id}","account":{},"amount":1}}"#, n % 1000);
                let mut record = BaseRecord::to(topic)
                    .partition((n % count as u64) as i32)
                    .key(&id)
                    .payload(&body)
                    .headers(OwnedHeaders::new().insert(Header {
                        key: "event_id",
                        value: Some(id.as_bytes()),
                    }));
                loop {
                    match producer.send(record) {
                        Ok(()) => break,
                        Err((_, returned)) => {
                            producer.poll(Duration::from_millis(10));
                            record = returned;
                        }
                    }
                }
                producer.poll(Duration::ZERO);
            }
            producer.flush(Duration::from_secs(300)).unwrap();
            println!(
                "produced {messages} messages in {:.2}s",
                started.elapsed().as_secs_f64()
            );
        }
        ["commit-end", brokers, topic, group] => {
            let client: BaseConsumer = config(brokers).set("group.id", *group).create().unwrap();
            let mut list = TopicPartitionList::new();
            for (p, _, high) in partitions(brokers, topic) {
                list.add_partition_offset(topic, p, Offset::Offset(high))
                    .unwrap();
            }
            client.commit(&list, CommitMode::Sync).unwrap();
            println!("committed the log end of every partition for {group}");
        }
        ["count", brokers, topic] => {
            let (consumer, total) = assigned(brokers, topic);
            let started = Instant::now();
            let mut remaining = total;
            while remaining > 0 {
                if let Some(message) = consumer.poll(Duration::from_millis(100)) {
                    message.unwrap();
                    remaining -= 1;
                }
            }
            println!("{total} {:.3}", started.elapsed().as_secs_f64());
            close_promptly(&consumer);
        }
        // The same read through librdkafka's batch call, as inboxctl's reader does it.
        ["count-batch", brokers, topic] => {
            use rdkafka::bindings as rd;
            let (consumer, total) = assigned(brokers, topic);
            let started = Instant::now();
            let mut remaining = total;
            // SAFETY: the queue and every message are released once, before the consumer.
            unsafe {
                let queue = rd::rd_kafka_queue_get_consumer(consumer.client().native_ptr());
                let mut batch = vec![std::ptr::null_mut(); 1024];
                while remaining > 0 {
                    // The call waits for a full batch (or the timeout): never ask for more
                    // than are left.
                    let n = rd::rd_kafka_consume_batch_queue(
                        queue,
                        100,
                        batch.as_mut_ptr(),
                        batch.len().min(remaining as usize),
                    );
                    for &message in &batch[..n.max(0) as usize] {
                        let message: *mut rd::rd_kafka_message_t = message;
                        assert_eq!(
                            (*message).err,
                            rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR
                        );
                        remaining -= 1;
                        rd::rd_kafka_message_destroy(message);
                    }
                }
                rd::rd_kafka_queue_destroy(queue);
            }
            println!("{total} {:.3}", started.elapsed().as_secs_f64());
            close_promptly(&consumer);
        }
        _ => {
            eprintln!("usage: kafka_bench produce BROKERS TOPIC PARTITIONS MESSAGES | commit-end BROKERS TOPIC GROUP | count[-batch] BROKERS TOPIC");
            std::process::exit(2);
        }
    }
}
