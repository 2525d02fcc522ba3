// A chat app for the hosted platform. `gantry deploy examples/chat.ts::chat --app-name demo --auth private` turns it
// into a ModelApp (the same one as examples/chat.yaml, for kubectl apply) and prints its URL;
// `gantry run examples/chat.ts::chat` serves it on this machine. The spec's fields are the ModelApp's (see the README).
import { defineApp } from "gantry";

export const chat = defineApp({
  model: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M",
  resources: { profile: "nvidia-gpu", gpus: 1 },
  scaling: { minReplicas: 0, maxReplicas: 3 },
});
