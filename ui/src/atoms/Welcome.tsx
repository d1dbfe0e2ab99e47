export interface WelcomeProps {
  /** The agent's name in a named-agent chat, else `null`. */
  readonly agentName: string | null;
  readonly brand: string;
}

export function Welcome({ agentName, brand }: WelcomeProps) {
  return (
    <div className="tf-welcome">
      <h1>{agentName ?? brand}</h1>
      <p>How can I help you today?</p>
    </div>
  );
}
