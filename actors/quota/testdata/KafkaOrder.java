// Prints the orders TestKafkaOrder and the cmd/kaas client-quota tests
// expect, building the maps as Kafka 4 does: ClientQuotaImage.dataToEntity,
// ClientQuotaDelta and ClientQuotasDelta applied to an empty image (a broker
// loading the quotas), AlterClientQuotasRequest.entries and the
// controller's results map. Run: java actors/quota/testdata/KafkaOrder.java
import java.util.*;

public class KafkaOrder {
    // ClientQuotaEntity: its hashCode is Objects.hash of its map.
    static final class Entity {
        final Map<String, String> entries;
        Entity(Map<String, String> e) { entries = e; }
        @Override public int hashCode() { return Objects.hash(entries); }
        @Override public boolean equals(Object o) { return o instanceof Entity && ((Entity) o).entries.equals(entries); }
        @Override public String toString() {
            StringBuilder b = new StringBuilder("{");
            for (Map.Entry<String, String> e : entries.entrySet())
                b.append(b.length() > 1 ? ", " : "").append(e.getKey()).append("=").append(e.getValue() == null ? "<default>" : e.getValue());
            return b.append("}").toString();
        }
    }

    static Entity dataToEntity(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return new Entity(Collections.unmodifiableMap(m));
    }

    static List<String> values(String... recordOrder) {
        Map<String, OptionalDouble> changes = new HashMap<>();
        for (String k : recordOrder) changes.put(k, OptionalDouble.of(1));
        Map<String, Double> quotas = new HashMap<>(0);
        for (String k : changes.keySet()) quotas.put(k, 1.0);
        return new ArrayList<>(quotas.keySet());
    }

    static List<Entity> entities(Entity... recordOrder) {
        Map<Entity, Integer> changes = new HashMap<>();
        for (Entity e : recordOrder) changes.put(e, 1);
        Map<Entity, Integer> image = new HashMap<>(0);
        for (Entity e : changes.keySet()) image.put(e, 1);
        return new ArrayList<>(image.keySet());
    }

    static Entity alterEntity(String... kv) {
        Map<String, String> m = new HashMap<>(kv.length / 2);
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return new Entity(m);
    }

    static List<Entity> alterResults(Entity... requestOrder) {
        Map<Entity, Integer> results = new HashMap<>();
        for (Entity e : requestOrder) results.put(e, 1);
        return new ArrayList<>(results.keySet());
    }

    public static void main(String[] args) {
        String p = "producer_byte_rate", c = "consumer_byte_rate", r = "request_percentage", m = "controller_mutation_rate", n = "connection_creation_rate";
        for (String[] keys : new String[][] {{p, c, r}, {c, m, p, r}, {p, r}, {c, p}, {m, r}, {c, m, r}, {n}})
            System.out.println("values " + Arrays.toString(keys) + ": " + values(keys));
        System.out.println("entity: " + dataToEntity("user", "User1", "client-id", "Client1") + " " + dataToEntity("user", null, "client-id", null));
        System.out.println("alter entity: " + alterEntity("user", "User1", "client-id", "Client1"));
        System.out.println("entities: " + entities(dataToEntity("user", "User1"), dataToEntity("user", "User1", "client-id", "Client1")));
        // In kaas's fixed order (users, then client ids, then ips; names, then the default).
        System.out.println("entities: " + entities(
            dataToEntity("user", "alice", "client-id", "c1"), dataToEntity("user", "alice"),
            dataToEntity("user", null, "client-id", null), dataToEntity("user", null), dataToEntity("client-id", "c1"),
            dataToEntity("ip", "10.0.0.1"), dataToEntity("ip", "::1"), dataToEntity("ip", null)));
        List<Entity> users = new ArrayList<>();
        for (String u : new String[] {"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "niaj", "olivia", null})
            users.add(dataToEntity("user", u));
        System.out.println("entities: " + entities(users.toArray(new Entity[0])));
        System.out.println("entities: " + entities(dataToEntity("user", "alice"), dataToEntity("user", null, "client-id", "c1"), dataToEntity("client-id", "c2"), dataToEntity("client-id", null)));
        System.out.println("entities: " + entities(dataToEntity("user", null), dataToEntity("ip", "10.1.2.3")));
        System.out.println("alter results: " + alterResults(alterEntity("user", "User1"), alterEntity("user", "User1", "client-id", "Client1"),
            alterEntity("client-id", "c1"), alterEntity("user", null), alterEntity("ip", "10.0.0.1")));
        System.out.println("alter results: " + alterResults(alterEntity("ip", "10.0.0.1"), alterEntity("user", null), alterEntity("client-id", "c1"),
            alterEntity("user", "User1", "client-id", "Client1"), alterEntity("user", "User1")));
    }
}
