/**
 * The dead-man switch (beyond the contract, additive; Binance's countdownCancelAll, Deribit's
 * cancel-on-disconnect by timer): `POST /orders/cancel-all-after { timeoutMs }` arms, re-arms or
 * (0) disarms the caller's one switch; `GET /orders/cancel-all-after` reads it. Session or API key
 * (scope trade to change it, read to read it). Arming is a core command (`orders.cancel_all_after`,
 * core/cancel-after.ts), answered once durable; the core's clock tick fires it.
 * Tested by test/api/cancel-after.test.ts.
 */
import { Type } from 'typebox';
import { CANCEL_AFTER_MAX_MS, CANCEL_AFTER_MIN_MS, validCancelAfter } from '../../core/cancel-after.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { execute, type GatewayContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { isoOrNull } from '../format.ts';
import { NullableIsoTime, OrNull, responses } from '../schemas/common.ts';

const DESCRIPTION = `A dead-man switch: unless called again in time, every live order of the account on
every venue (perpetuals, dated futures, options, spot) is cancelled at the deadline, untriggered stops and
take-profit/stop-loss exits included (as POST /perps/orders/cancel-all and POST /orders/cancel-all without a
body; Binance and Deribit also cancel every open order). timeoutMs ${CANCEL_AFTER_MIN_MS} to
${CANCEL_AFTER_MAX_MS} arms it: the deadline is the service time at which the request is applied plus
timeoutMs. Calling again before the deadline re-arms it from then (one switch per account); timeoutMs 0
disarms it. Call it well within timeoutMs (every timeoutMs / 3, say) so one slow round trip does not cancel
everything.

The cancel happens on the service's first clock tick at or after the deadline (TICK_MS, 1 s by default), with
the usual order events (streams, order history). The switch then disarms. An order placed between the deadline
and that tick is cancelled with the rest; a call that arrives after the deadline is too late: the orders are
cancelled first (listed in \`cancelled\`), then the new timeout arms (or 0 disarms).

The switch is state of the exchange core: it survives a restart (snapshot and journal), and downtime past the
deadline cancels on the first tick after the start. The response gives the deadline as ISO 8601 (\`deadline\`)
and as Unix milliseconds (\`deadlineMs\`), both null when disarmed.`;

const SwitchView = Type.Object({
  armed: Type.Boolean(),
  deadline: NullableIsoTime,
  deadlineMs: OrNull(Type.Integer({ description: 'Unix milliseconds' })),
});

const ArmView = Type.Object({
  timeoutMs: Type.Integer(),
  armed: Type.Boolean(),
  deadline: NullableIsoTime,
  deadlineMs: OrNull(Type.Integer({ description: 'Unix milliseconds' })),
  cancelled: Type.Array(Type.String(), {
    description: 'ids of the orders a switch already past its deadline cancelled before this call (usually empty)',
  }),
});

const switchView = (deadline: number | null) => ({ armed: deadline !== null, deadline: isoOrNull(deadline), deadlineMs: deadline });

export function cancelAfterRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.post('/orders/cancel-all-after', {
    config: { access: 'trade', orderAction: true },
    schema: {
      tags: ['orders'],
      summary: 'Dead-man switch: cancel every live order of the account unless called again within timeoutMs (0 disarms)',
      description: DESCRIPTION,
      body: Type.Object(
        {
          timeoutMs: Type.Integer({
            minimum: 0,
            maximum: CANCEL_AFTER_MAX_MS,
            description: `0 disarms; otherwise ${CANCEL_AFTER_MIN_MS} to ${CANCEL_AFTER_MAX_MS} (400 VALIDATION_ERROR outside)`,
          }),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: ArmView }, [400, 401, 403, 429]),
    },
  }, async (req) => {
    const { timeoutMs } = req.body;
    if (!validCancelAfter(timeoutMs)) {
      throw apiError('VALIDATION_ERROR', `timeoutMs must be 0 (disarm) or from ${CANCEL_AFTER_MIN_MS} to ${CANCEL_AFTER_MAX_MS}`);
    }
    const r = await execute(ctx, { type: 'orders.cancel_all_after', account: callerAddress(req), timeoutMs });
    return { timeoutMs: r.timeoutMs, ...switchView(r.deadline), cancelled: r.cancelled };
  });

  app.get('/orders/cancel-all-after', {
    config: { access: 'read' },
    schema: {
      tags: ['orders'],
      summary: 'The caller\'s dead-man switch: armed, and its deadline',
      description: 'armed false (deadline and deadlineMs null) when never armed, disarmed, or fired. See POST /orders/cancel-all-after.',
      response: responses({ 200: SwitchView }),
    },
  }, async (req) => switchView(ctx.core.cancelAfterDeadline(callerAddress(req))));
}
