package conn

import (
	"fmt"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/brokerconfig"
)

// memoryLogDir names the log dir of a broker without --data-dir.
const memoryLogDir = "memory"

// LogDir is the log dir of a broker with data dir dataDir ("": in memory),
// as DescribeLogDirs names it and cordoned.log.dirs must. Every broker of a
// cluster mounts the shared volume at the same path, so it is every
// broker's log dir.
func LogDir(dataDir string) string {
	if dataDir == "" {
		return memoryLogDir
	}
	return dataDir
}

// cordonedBrokers reports, per broker id, whether cordoned.log.dirs in
// force on that broker cordons its log dir (KIP-1066). The dynamic broker
// configs are on the shared volume, so any broker can tell.
func cordonedBrokers(s *Server) func(id int32) bool {
	if s.DynamicInForce == nil {
		return func(int32) bool { return false }
	}
	set, dir := s.DynamicInForce(), LogDir(s.DataDir)
	return func(id int32) bool { return brokerconfig.Cordoned(set.For(id), dir) }
}

// everyBrokerCordoned: no alive broker may take a new partition, which
// Kafka answers INVALID_REPLICATION_FACTOR for CreateTopics and
// CreatePartitions without a manual assignment.
func everyBrokerCordoned(s *Server, v *routing.View) (string, bool) {
	cordoned := cordonedBrokers(s)
	alive := 0
	for _, b := range v.Brokers {
		if b.Alive {
			alive++
			if !cordoned(b.ID) {
				return "", false
			}
		}
	}
	if alive == 0 {
		return "", false
	}
	return fmt.Sprintf("Unable to replicate the partition 1 time(s): the log dirs of all %d available broker(s) are cordoned (cordoned.log.dirs).", alive), true
}
