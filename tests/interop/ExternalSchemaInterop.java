// A Java PIP-420 client for the interop tests (tests/integration/test_java_interop.py): an
// external schema backed by the same Confluent-compatible registry, in the Pulsar Java client
// 4.2 the broker ships. Run as a single source file against the broker's jars:
//
//   java -cp 'PULSAR_HOME/lib/*' ExternalSchemaInterop.java consume SERVICE REGISTRY TOPIC SUB N
//   java -cp 'PULSAR_HOME/lib/*' ExternalSchemaInterop.java produce SERVICE REGISTRY TOPIC SUBJECT [--property] JSON...
//   java -cp 'PULSAR_HOME/lib/*' ExternalSchemaInterop.java topics SERVICE REGISTRY SUBJECT TOPIC...
//
// consume prints one "RESULT" line per message: the record as JSON and where its schema id came from
// ("field32" when Message.getSchemaId() has it, "property" for the __schema_id recipe), or
// "no schema id". produce sends each JSON value with the subject's latest version (SUBJECT
// "@topic": Confluent's TopicNameStrategy on the topic string encode is given); the Java
// client puts the id in metadata field 32, and --property also sets __schema_id (the recipe for
// Python readers, which cannot read field 32). topics sends one message to each TOPIC, spelled as
// given, and prints the topic string the Java client hands the schema's encode(topic, value) and
// decode(topic, data, id): what a Java external schema derives its subject from.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.EncodeData;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.common.schema.SchemaInfo;
import org.apache.pulsar.common.schema.SchemaType;

public class ExternalSchemaInterop {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    /** A PIP-420 external schema: Avro values, ids from the registry (0x00 + 4-byte id). */
    static final class RegistryAvroSchema implements Schema<GenericRecord> {
        final String registry;
        final String subject;
        volatile String encodedFor;
        volatile String decodedFor;

        RegistryAvroSchema(String registry, String subject) {
            this.registry = registry;
            this.subject = subject;
        }

        @Override
        public SchemaInfo getSchemaInfo() {
            return SchemaInfo.builder().name("external").type(SchemaType.EXTERNAL).schema(new byte[0]).build();
        }

        @Override
        public byte[] encode(GenericRecord value) {
            throw new UnsupportedOperationException("an external schema encodes with its topic");
        }

        @Override
        public EncodeData encode(String topic, GenericRecord value) {
            encodedFor = topic;
            try {
                JsonNode latest = get(registry + "/subjects/" + subjectOf(subject, topic) + "/versions/latest");
                int id = latest.get("id").asInt();
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
                new GenericDatumWriter<GenericRecord>(value.getSchema()).write(value, encoder);
                encoder.flush();
                return new EncodeData(out.toByteArray(), confluentId(id));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }

        @Override
        public GenericRecord decode(String topic, ByteBuffer data, byte[] schemaId) {
            decodedFor = topic;
            return null;
        }

        @Override
        public Schema<GenericRecord> clone() {
            return this;
        }
    }

    /** A result line; the Java client logs to stdout too, so results carry a prefix of their own. */
    static void out(String line) {
        System.out.println("RESULT " + line);
    }

    /** SUBJECT, or with "@topic" Confluent's TopicNameStrategy on the topic encode was given, URL-encoded. */
    static String subjectOf(String subject, String topic) {
        String name = subject.equals("@topic") ? topic + "-value" : subject;
        return java.net.URLEncoder.encode(name, java.nio.charset.StandardCharsets.UTF_8);
    }

    static byte[] confluentId(int id) {
        return ByteBuffer.allocate(5).put((byte) 0).putInt(id).array();
    }

    static JsonNode get(String url) throws Exception {
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create(url)).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException(url + ": HTTP " + response.statusCode() + " " + response.body());
        }
        return JSON.readTree(response.body());
    }

    static org.apache.avro.Schema avroSchema(String registry, int id) throws Exception {
        return new org.apache.avro.Schema.Parser().parse(get(registry + "/schemas/ids/" + id).get("schema").asText());
    }

    /** The Confluent id inside metadata id bytes (with or without the 0xFF magic byte). */
    static int idOf(byte[] metadataId) {
        ByteBuffer buffer = ByteBuffer.wrap(metadataId);
        if ((metadataId[0] & 0xFF) == 0xFF) {
            buffer.get();
        }
        if (buffer.get() != 0) {
            throw new IllegalArgumentException("not a Confluent integer id: " + HexFormat.of().formatHex(metadataId));
        }
        return buffer.getInt();
    }

    public static void main(String[] args) throws Exception {
        String command = args[0];
        String service = args[1];
        String registry = args[2];
        String topic = args[3];
        try (PulsarClient client = PulsarClient.builder().serviceUrl(service).build()) {
            if (command.equals("consume")) {
                consume(client, registry, topic, args[4], Integer.parseInt(args[5]));
            } else if (command.equals("topics")) {
                topics(client, registry, args[3], java.util.Arrays.copyOfRange(args, 4, args.length));
            } else {
                produce(client, registry, topic, args[4], args);
            }
        }
    }

    static void consume(PulsarClient client, String registry, String topic, String subscription, int count)
            throws Exception {
        try (Consumer<GenericRecord> consumer = client.newConsumer(new RegistryAvroSchema(registry, "unused"))
                .topic(topic).subscriptionName(subscription)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            for (int i = 0; i < count; i++) {
                Message<GenericRecord> msg = consumer.receive(20, TimeUnit.SECONDS);
                if (msg == null) {
                    out("timeout");
                    return;
                }
                Optional<byte[]> field32 = msg.getSchemaId();
                String property = msg.getProperty("__schema_id");
                byte[] metadataId;
                String source;
                if (field32.isPresent() && field32.get().length > 0) {
                    metadataId = field32.get();
                    source = "field32";
                } else if (property != null) {
                    metadataId = HexFormat.of().parseHex(property);
                    source = "property";
                } else {
                    out("no schema id");
                    consumer.acknowledge(msg);
                    continue;
                }
                org.apache.avro.Schema schema = avroSchema(registry, idOf(metadataId));
                GenericRecord record = new GenericDatumReader<GenericRecord>(schema)
                        .read(null, DecoderFactory.get().binaryDecoder(msg.getData(), null));
                out(record + " " + source);
                consumer.acknowledge(msg);
            }
        }
    }

    static void produce(PulsarClient client, String registry, String topic, String subject, String[] args)
            throws Exception {
        boolean property = false;
        JsonNode latest = get(registry + "/subjects/" + subjectOf(subject, topic) + "/versions/latest");
        org.apache.avro.Schema schema = new org.apache.avro.Schema.Parser().parse(latest.get("schema").asText());
        String hexId = "ff" + HexFormat.of().formatHex(confluentId(latest.get("id").asInt()));
        try (Producer<GenericRecord> producer = client.newProducer(new RegistryAvroSchema(registry, subject))
                .topic(topic).enableBatching(false).create()) {
            for (int i = 5; i < args.length; i++) {
                if (args[i].equals("--property")) {
                    property = true;
                    continue;
                }
                GenericRecord record = new GenericDatumReader<GenericRecord>(schema)
                        .read(null, DecoderFactory.get().jsonDecoder(schema, args[i]));
                var message = producer.newMessage().value(record);
                if (property) {
                    message = message.property("__schema_id", hexId);
                }
                out("sent " + message.send());
            }
        }
    }

    static void topics(PulsarClient client, String registry, String subject, String[] spellings) throws Exception {
        JsonNode latest = get(registry + "/subjects/" + subjectOf(subject, "") + "/versions/latest");
        org.apache.avro.Schema schema = new org.apache.avro.Schema.Parser().parse(latest.get("schema").asText());
        for (String spelling : spellings) {
            RegistryAvroSchema producing = new RegistryAvroSchema(registry, subject);
            RegistryAvroSchema consuming = new RegistryAvroSchema(registry, subject);
            try (Consumer<GenericRecord> consumer = client.newConsumer(consuming).topic(spelling)
                    .subscriptionName("topics").subscribe();
                    Producer<GenericRecord> producer = client.newProducer(producing).topic(spelling)
                            .enableBatching(false).create()) {
                GenericRecord record = new GenericDatumReader<GenericRecord>(schema)
                        .read(null, DecoderFactory.get().jsonDecoder(schema, "{\"f1\": \"x\"}"));
                producer.newMessage().value(record).send();
                Message<GenericRecord> msg = consumer.receive(20, TimeUnit.SECONDS);
                if (msg == null) {
                    out(spelling + " timeout");
                    continue;
                }
                msg.getValue();
                out(spelling + " encode=" + producing.encodedFor + " decode=" + consuming.decodedFor);
            }
        }
    }
}
