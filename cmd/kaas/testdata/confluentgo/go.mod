module confluentgo

go 1.26.4

require github.com/confluentinc/confluent-kafka-go/v2 v2.11.1
