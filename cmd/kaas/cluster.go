package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/controller"
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
)

// kubeQPS and kubeBurst bound the broker's requests to the apiserver, per
// client (core and dynamic).
const kubeQPS, kubeBurst = 50, 100

// kubeConfig is the in-cluster config inside a pod, else $KUBECONFIG.
func kubeConfig() (*rest.Config, error) {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return rest.InClusterConfig()
	}
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		return nil, fmt.Errorf("cluster mode needs the in-cluster config or KUBECONFIG")
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

// startCluster wires the cluster-mode supervisor: Kubernetes clients, the
// heartbeat gRPC server, and the supervisor actor.
func (b *broker) startCluster(cfg *serveConfig, opener storage.Opener) error {
	rc, err := kubeConfig()
	if err != nil {
		return err
	}
	// client-go's default client-side limit (5 requests a second, bursts of
	// 10) is shared by every KafkaTopic create and status write: a burst of
	// CreateTopics (a test suite, a provisioning tool) would queue past the
	// admin timeout. The apiserver's priority and fairness guards it instead.
	rc.QPS, rc.Burst = kubeQPS, kubeBurst
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	b.dyn = dyn
	b.hbLn, err = net.Listen("tcp", cfg.HeartbeatAddr)
	if err != nil {
		return fmt.Errorf("listen on --heartbeat-addr %s: %w", cfg.HeartbeatAddr, err)
	}
	hub := controller.NewHub()
	b.grpc = grpc.NewServer(append([]grpc.ServerOption{grpc.InitialWindowSize(cluster.WindowSize), grpc.InitialConnWindowSize(cluster.WindowSize)},
		append(b.sec.heartbeatServerOptions(cfg), tracing.GRPCServerOptions()...)...)...)
	heartbeatpb.RegisterHeartbeatServer(b.grpc, hub)
	go func() { _ = b.grpc.Serve(b.hbLn) }()
	nonce := make([]byte, 4)
	_, _ = rand.Read(nonce)
	self := routing.Broker{ID: int32(cfg.BrokerID), Name: cfg.podName, Host: cfg.advHost, Port: cfg.advPort, Rack: cfg.rack(), Alive: true, Listeners: cfg.publishedListeners()}
	b.fence = cluster.NewFence(cfg.FenceAfter)
	b.sup, err = b.system.Spawn("supervisor", supervisor.NewCluster(supervisor.ClusterConfig{
		ClusterID:     cfg.ClusterID,
		Self:          self,
		Incarnation:   cfg.podName + "_" + cfg.podUID + "_" + hex.EncodeToString(nonce),
		HeartbeatAddr: cfg.AdvertisedHeartbeatAddr,
		Store:         b.views,
		Opener:        opener,
		Partition: partition.Config{Opener: opener, Log: b.partitionLog(), Fence: b.fence, Cleaner: b.cleaner(cfg), MaintenanceInterval: cfg.RetentionCheckInterval, RunHandoff: b.runHandoff,
			ProducerExpiration: b.dynCfgs.ProducerExpiration},
		DataDir:           cfg.DataDir,
		Fence:             b.fence,
		Kube:              kube,
		Dyn:               dyn,
		Namespace:         cfg.podNamespace,
		LeaseName:         cfg.LeaseName,
		LeaseDuration:     cfg.LeaseDuration,
		RenewDeadline:     cfg.RenewDeadline,
		RetryPeriod:       cfg.RetryPeriod,
		DeadAfter:         cfg.DeadAfter,
		StrayGrace:        cfg.StrayGrace,
		ConcurrentMoves:   cfg.ConcurrentMoves,
		HeartbeatInterval: cfg.HeartbeatInterval,
		HeartbeatDial:     b.sec.heartbeatDialOptions(cfg),
		Hub:               hub,
		DefaultPartitions: int32(cfg.DefaultPartitions),
		TopicDefaults:     b.dynCfgs.TopicDefaults,
		Cordoned:          b.dynCfgs.Cordoned,
		CordonedBroker:    b.dynCfgs.CordonedBroker,
		Fatal:             b.fatal,
		Log:               b.logger("actor", "supervisor"),
	}))
	return err
}
